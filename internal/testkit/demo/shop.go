package demo

import (
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/web/agent"
)

// The shop is the demo's single-page shop on a site of its own origin: the
// page stays open, "Book" waits its turn in waitroom's in-page agent (a
// dialog over the page; the cart stays as it was), and the booking API
// behind the gate middleware takes the pass the agent got, in
// Authorization: Bearer. Nothing the page's script says counts: only a
// pass that the middleware verifies books.

var shopPage = template.Must(template.New("shop").Parse(`<!doctype html><html lang="{{.Lang}}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="waitroom-agent" content="{{.Agent}}"><meta name="waitroom-queue" content="{{.Queue}}">
<title>KTX demo shop</title><link rel="stylesheet" href="/static/demo.css"><link rel="stylesheet" href="/static/shop.css">
<script type="module" src="/static/shop.js"></script></head><body>
<header><strong>KTX</strong> demo shop</header><main>
<h1 id="event">Seollal holiday trains: Seoul → Busan</h1>
<p>Put trains in your cart, then book. When many people book at once you wait your turn here, on this page.</p>
<ul id="trains" class="trains">
<li><span>KTX 101 · 06:00</span> <button type="button" class="secondary add" data-train="KTX 101 · 06:00">Add</button></li>
<li><span>KTX 103 · 07:00</span> <button type="button" class="secondary add" data-train="KTX 103 · 07:00">Add</button></li>
<li><span>KTX 105 · 08:00</span> <button type="button" class="secondary add" data-train="KTX 105 · 08:00">Add</button></li>
</ul>
<h2>Cart</h2><ol id="cart"></ol>
<button type="button" id="book">Book</button>
<p id="result" role="status"></p>
<button type="button" id="done" class="secondary" hidden>I'm done: give my turn back</button>
</main><footer>This page's origin is not waitroom's: the agent is loaded from it, and the booking API checks the pass.</footer></body></html>`))

// ShopOptions configure the shop.
type ShopOptions struct {
	Queue string
	// Waitroom is waitroom's base URL as this server reaches it (JWKS,
	// verify, done, the agent's version).
	Waitroom string
	// Public is waitroom's base URL as browsers reach it: the page loads
	// the agent from there, and that origin talks to the agent's API.
	Public string
	// Issuer is waitroom's WAITROOM_ISSUER.
	Issuer string
	Client *http.Client
	// NoBlobWorkers leaves blob: out of the page's worker-src, as a strict
	// CSP does: the agent then solves proof of work on the page's thread.
	NoBlobWorkers bool
	// Widget are the origins of a human check provider's widget, which
	// the page's policy allows to load, frame and ask (the provider's
	// documented sources: docs/AGENT.md).
	Widget []string
}

// NewShop returns the shop's handler: the page and its files, and the
// booking API (/api/) behind the gate middleware, which takes the pass
// from Authorization: Bearer and answers 401 JSON without a valid one.
// ctx bounds the middleware's JWKS refreshes.
func NewShop(ctx context.Context, o ShopOptions) (http.Handler, error) {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 5 * time.Second}
	}
	if o.Queue == "" || o.Waitroom == "" || o.Public == "" {
		return nil, errors.New("demo: the shop needs Queue, Waitroom and Public")
	}
	pub, err := url.Parse(o.Public)
	if err != nil || (pub.Scheme != "http" && pub.Scheme != "https") || pub.Host == "" {
		return nil, errors.New("demo: Public is not an http(s) URL")
	}
	base := strings.TrimRight(o.Waitroom, "/")
	g, err := gate.New(ctx, gate.Options{
		Routes:    []gate.Route{{Prefix: "/api/", Queue: o.Queue}},
		Issuer:    o.Issuer,
		JWKSURL:   base + "/.well-known/jwks.json",
		VerifyURL: base + "/api/v1/verify",
		Client:    o.Client,
	})
	if err != nil {
		return nil, err
	}
	assets, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	s := &shop{o: o, base: base, public: pub.Scheme + "://" + pub.Host}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(assets)))
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("POST /api/book", s.book)
	mux.HandleFunc("POST /api/done", s.done)
	return s.headers(g.Handler(mux)), nil
}

type shop struct {
	o      ShopOptions
	base   string
	public string // waitroom's origin as browsers reach it
}

// agentURL is the agent's current versioned address (cached a day by
// browsers), or its bare one (revalidated) when waitroom does not say.
func (s *shop) agentURL(ctx context.Context) string {
	bare := s.public + agent.ModulePath
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+agent.VersionPath, nil)
	if err != nil {
		return bare
	}
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return bare
	}
	defer resp.Body.Close()
	var v agent.VersionResponse
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&v) != nil || !strings.HasPrefix(v.Module, agent.ModulePath+"?v=") {
		return bare
	}
	return s.public + v.Module
}

func (s *shop) page(w http.ResponseWriter, r *http.Request) {
	lang := "en"
	if l := r.URL.Query().Get("lang"); l == "ko" {
		lang = l
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = shopPage.Execute(w, struct{ Lang, Agent, Queue string }{lang, s.agentURL(r.Context()), s.o.Queue})
}

// bookRequest is the cart the page sends.
type bookRequest struct {
	Items []string `json:"items"`
}

// book books the cart for the pass's holder: the gate let the request in,
// so the pass is valid, for this queue, and its admission has not ended.
func (s *shop) book(w http.ResponseWriter, r *http.Request) {
	c, ok := gate.FromContext(r.Context())
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "no pass"})
		return
	}
	var req bookRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || len(req.Items) == 0 || len(req.Items) > 10 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "send {\"items\": [...]}, one to ten"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"booked": req.Items, "sub": c.Subject, "exp": c.Expires.Unix()})
}

// done ends the admission: the pass goes to waitroom's done endpoint,
// server to server, and the slot goes to the next person.
func (s *shop) done(w http.ResponseWriter, r *http.Request) {
	c, _ := gate.FromContext(r.Context())
	token, _ := gate.PassFromContext(r.Context())
	d := &demo{o: Options{Client: s.o.Client}, base: s.base}
	if err := d.endAdmission(r.Context(), c.Queue, token); err != nil {
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// headers is the shop's own policy: scripts from itself and waitroom's
// origin, requests to both, the agent's proof of work in a blob worker,
// its hand-over's QR code as a blob image, no inline script or style. The agent needs nothing more
// (docs/AGENT.md).
func (s *shop) headers(next http.Handler) http.Handler {
	workers := "blob:"
	if s.o.NoBlobWorkers {
		workers = "'none'"
	}
	widget := ""
	for _, o := range s.o.Widget {
		widget += " " + o
	}
	csp := "default-src 'self'; script-src 'self' " + s.public + widget + "; connect-src 'self' " + s.public + widget +
		"; frame-src 'self'" + widget + "; worker-src " + workers + "; style-src 'self'; img-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}
