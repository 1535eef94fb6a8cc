// Package demo is a small order page for trying waitroom end to end: an
// event, a "buy" button and a "done" button that ends the admission, and a
// single-page shop on an origin of its own whose "Book" waits in waitroom's
// in-page agent (shop.go). Both are protected by the gate package's
// middleware, as an order service written in Go would be; the order page
// sits behind waitroom's reverse-proxy gate in the compose set-up
// (cmd/demo-order).
package demo

import (
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/web/outage"
)

//go:embed static
var static embed.FS

var pages = template.Must(template.New("").Parse(`
{{define "head"}}<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · KTX demo</title><link rel="stylesheet" href="/static/demo.css"></head><body>
<header><strong>KTX</strong> demo order page</header><main>{{end}}
{{define "foot"}}</main><footer>Behind a waitroom gate. Admitted as <code id="sub">{{.Sub}}</code>; your turn ends by <time id="exp">{{.Expires}}</time>.</footer></body></html>{{end}}
{{define "event"}}{{template "head" .}}
<h1 id="event">Seollal holiday trains: Seoul → Busan</h1>
<p>It is your turn. Pick a train and book it before your turn ends.</p>
<form method="post" action="/buy"><label>Train <select name="train">
<option>KTX 101 · 06:00</option><option>KTX 103 · 07:00</option><option>KTX 105 · 08:00</option></select></label>
<button id="buy" type="submit">Buy</button></form>
<form method="post" action="/done"><button id="done" type="submit" class="secondary">I'm done: give my turn back</button></form>
{{template "foot" .}}{{end}}
{{define "bought"}}{{template "head" .}}
<h1 id="bought">Booked: {{.Train}}</h1><p>This is a demo: nothing was charged.</p>
<form method="post" action="/done"><button id="done" type="submit">I'm done: give my turn back</button></form>
{{template "foot" .}}{{end}}
{{define "done"}}<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Done · KTX demo</title>
<link rel="stylesheet" href="/static/demo.css"></head><body><header><strong>KTX</strong> demo order page</header>
<main><h1 id="finished">Thank you</h1><p>Your turn has ended and your place is free for the next person.
Opening the order page again sends you to the waiting line.</p><p><a href="/">Back to the event</a></p></main></body></html>{{end}}
`))

type pageData struct {
	Title, Sub, Train string
	Expires           string
}

// Options configure the demo.
type Options struct {
	Queue string
	// Waitroom is waitroom's base URL as this server reaches it (the JWKS,
	// /api/v1/verify and the admin API are under it).
	Waitroom string
	// Issuer is waitroom's WAITROOM_ISSUER.
	Issuer string
	// WaitingPage is where browsers without a pass go: "/q/{queue}" on the
	// same site behind the reverse-proxy gate.
	WaitingPage string
	// InsecureCookie: local http development only.
	InsecureCookie bool
	Client         *http.Client
	// Capacity is how many orders the page serves at once (0: no limit),
	// each taking OrderTime; more wait (Capacity, what the automatic rate measures).
	Capacity  int
	OrderTime time.Duration
}

// New returns the demo's handler, behind the gate middleware. ctx bounds
// the middleware's JWKS refreshes.
func New(ctx context.Context, o Options) (http.Handler, error) {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 5 * time.Second}
	}
	base := strings.TrimRight(o.Waitroom, "/")
	g, err := gate.New(ctx, gate.Options{
		Queue:          o.Queue,
		Issuer:         o.Issuer,
		JWKSURL:        base + "/.well-known/jwks.json",
		VerifyURL:      base + "/api/v1/verify",
		WaitingPage:    o.WaitingPage,
		Bypass:         []string{"/static/"},
		InsecureCookie: o.InsecureCookie,
		Client:         o.Client,
		Unavailable:    outage.Handler(outage.AtGate),
	})
	if err != nil {
		return nil, err
	}
	assets, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	d := &demo{o: o, base: base}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(assets)))
	mux.HandleFunc("GET /{$}", d.event)
	var buy http.Handler = http.HandlerFunc(d.buy)
	if o.Capacity > 0 {
		buy = Capacity(buy, o.Capacity, o.OrderTime)
	}
	mux.Handle("POST /buy", buy)
	mux.HandleFunc("POST /done", d.done)
	return securityHeaders(g.Handler(mux)), nil
}

type demo struct {
	o    Options
	base string
}

func (d *demo) data(r *http.Request, title string) pageData {
	c, _ := gate.FromContext(r.Context())
	return pageData{Title: title, Sub: c.Subject, Expires: c.Expires.UTC().Format("15:04:05 MST")}
}

func (d *demo) event(w http.ResponseWriter, r *http.Request) {
	render(w, "event", d.data(r, "Book"))
}

func (d *demo) buy(w http.ResponseWriter, r *http.Request) {
	data := d.data(r, "Booked")
	data.Train = r.PostFormValue("train")
	if data.Train == "" {
		data.Train = "KTX 101 · 06:00"
	}
	render(w, "bought", data)
}

// done gives the turn back: the order page forwards the user's pass to
// waitroom's done endpoint (server to server), which ends the admission,
// so the pass is revoked, the gate closes and the slot is reused.
func (d *demo) done(w http.ResponseWriter, r *http.Request) {
	c, _ := gate.FromContext(r.Context())
	token, _ := gate.PassFromContext(r.Context()) // the pass the gate let the request in with
	if err := d.endAdmission(r.Context(), c.Queue, token); err != nil {
		http.Error(w, "could not end the turn: "+err.Error(), http.StatusBadGateway)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: gate.CookieName(d.o.Queue, !d.o.InsecureCookie), Path: "/", MaxAge: -1, HttpOnly: true, Secure: !d.o.InsecureCookie, SameSite: http.SameSiteLaxMode})
	render(w, "done", pageData{Title: "Done"})
}

func (d *demo) endAdmission(ctx context.Context, queue, pass string) error {
	u := d.base + "/api/v1/queues/" + url.PathEscape(queue) + "/done"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+pass)
	resp, err := d.o.Client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("waitroom answered %s", resp.Status)
	}
	return nil
}

func render(w http.ResponseWriter, name string, data pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := pages.ExecuteTemplate(w, name, data); err != nil {
		http.Error(w, "template: "+err.Error(), http.StatusInternalServerError)
	}
}

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}
