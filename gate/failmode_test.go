package gate_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck/pathtest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/web/outage"
)

// flakyVerify stands in front of a waitroom's /api/v1/verify: it passes
// the question on, answers 503 while down, or holds it while stalled.
type flakyVerify struct {
	srv     *httptest.Server
	down    atomic.Bool
	stalled atomic.Bool
	asked   atomic.Int64
}

func newFlakyVerify(t *testing.T, w *waitroom) *flakyVerify {
	f := &flakyVerify{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		f.asked.Add(1)
		if f.stalled.Load() {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		if f.down.Load() {
			http.Error(rw, `{"error":{"code":"unavailable"}}`, http.StatusServiceUnavailable)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), "GET", w.srv.URL+r.URL.RequestURI(), nil)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		rw.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(rw, resp.Body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// records counts log records.
type records struct {
	mu   sync.Mutex
	msgs []string
}

func (c *records) Enabled(context.Context, slog.Level) bool { return true }
func (c *records) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	c.msgs = append(c.msgs, r.Message)
	c.mu.Unlock()
	return nil
}
func (c *records) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *records) WithGroup(string) slog.Handler      { return c }
func (c *records) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.msgs)
}

// failRecheck is how often a fail-mode test's gate asks again whether a
// pass is current: a test steps its clock over it instead of sleeping.
const failRecheck = 50 * time.Millisecond

type failGate struct {
	g      *gate.Gate
	h      http.Handler
	clock  *gate.Clock  // the pass cache's
	opened atomic.Int64 // OnFailOpen calls
	log    *records
}

func newFailGate(t *testing.T, w *waitroom, f *flakyVerify, mode gate.FailMode) *failGate {
	t.Helper()
	return newFailGateWith(t, w, f, mode, outage.Handler(outage.AtGate))
}

// newFailGateWith is newFailGate showing away (Options.Unavailable)
// while the checker cannot tell.
func newFailGateWith(t *testing.T, w *waitroom, f *flakyVerify, mode gate.FailMode, away http.Handler) *failGate {
	t.Helper()
	fg := &failGate{log: &records{}, clock: &gate.Clock{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	opts := gate.Options{
		Queue:           "default",
		Issuer:          "https://waitroom.test",
		JWKSURL:         w.srv.URL + "/.well-known/jwks.json",
		VerifyURL:       f.srv.URL + "/api/v1/verify",
		WaitingPage:     "/q/default",
		RecheckInterval: failRecheck,
		Client:          &http.Client{Timeout: 300 * time.Millisecond},
		Fail:            mode,
		OnFailOpen: func(q string) {
			if q != "default" {
				t.Errorf("OnFailOpen(%q)", q)
			}
			fg.opened.Add(1)
		},
		Logger:      slog.New(fg.log),
		Unavailable: away,
	}
	gate.WithPassClock(&opts, fg.clock)
	g, err := gate.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	fg.g = g
	fg.h = g.Handler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		c, _ := gate.FromContext(r.Context())
		io.WriteString(rw, "order:"+c.Subject)
	}))
	return fg
}

// what names an answer: "order:<sub>", "waiting" (303 to the waiting
// page), "refused" (401), "unavailable" (503 with Retry-After: the page
// for a browser, JSON unavailable otherwise), "invalid_path", "204:<sub>"
// (forward auth), or what it was.
func what(r *httptest.ResponseRecorder) string {
	body := r.Body.String()
	switch {
	case r.Code == 200 && strings.HasPrefix(body, "order:"):
		return body
	case r.Code == 204:
		return "204:" + r.Header().Get(gate.HeaderSub)
	case r.Code == 303 && strings.HasPrefix(r.Header().Get("Location"), "/q/default"):
		return "waiting"
	case r.Code == 401:
		return "refused"
	case r.Code == 400 && strings.Contains(body, "invalid_path"):
		return "invalid_path"
	case r.Code == 503 && r.Header().Get("Retry-After") != "" && r.Header().Get("Cache-Control") == "no-store" &&
		(strings.Contains(body, `"code":"unavailable"`) || strings.Contains(body, `http-equiv="refresh"`)):
		if strings.HasPrefix(r.Header().Get("Content-Type"), "text/html") {
			return "unavailable page"
		}
		return "unavailable"
	}
	return r.Result().Status + " " + body
}

// byMode is what a request is answered in each fail mode.
type byMode map[gate.FailMode]string

func all(s string) byMode { return byMode{gate.FailClosed: s, gate.FailOpen: s, gate.FailStrict: s} }

func modes(closed, open, strict string) byMode {
	return byMode{gate.FailClosed: closed, gate.FailOpen: open, gate.FailStrict: strict}
}

// failCase is one request while the waitroom is away and its answers.
type failCase struct {
	name, method, target string // method "": GET
	header               []string
	want                 byMode
}

// Each fail mode, while the waitroom's verify endpoint fails: exactly
// who passes; bad passes and ambiguous paths refused as ever; fail-opens
// counted and logged once; and all as before once it answers again.
func TestFailModes(t *testing.T) {
	w := newWaitroom(t)
	valid := w.issue(t, "default", time.Now().Add(time.Hour))
	forged := valid[:len(valid)-8] + "AAAAAAAA"
	expired := w.issue(t, "default", time.Now().Add(-2*time.Second))
	other := w.issue(t, "other", time.Now().Add(time.Hour))
	browser := []string{"Accept", "text/html"}
	api := []string{"Accept", "application/json"}
	cookie := func(tok string) []string { return []string{"Cookie", gate.CookieName("default", true) + "=" + tok} }
	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	cases := []failCase{
		{"valid cookie", "", "/order", append(cookie(valid), browser...), modes("order:a:holder", "order:a:holder", "unavailable page")},
		{"valid bearer", "", "/order", bearer(valid), modes("order:a:holder", "order:a:holder", "unavailable")},
		{"no pass, browser", "", "/order", browser, modes("unavailable page", "order:", "unavailable page")},
		{"no pass, API", "", "/order", api, modes("unavailable", "order:", "unavailable")},
		{"no pass, POST", "POST", "/order", nil, modes("unavailable", "order:", "unavailable")},
		{"forged cookie", "", "/order", append(cookie(forged), browser...), all("waiting")},
		{"forged bearer", "", "/order", bearer(forged), all("refused")},
		{"expired bearer", "", "/order", bearer(expired), all("refused")},
		// Another queue's pass never opens this room; failing open, its
		// holder passes as everyone does, unchecked (TestFailModesTwoRooms).
		{"another queue's pass", "", "/order", bearer(other), modes("refused", "order:", "refused")},
		{"ambiguous path", "", "/a/%2e%2e/order", bearer(valid), all("invalid_path")},
		{"pass-link exchange", "", "/order?a=1&wr_pass=" + url.QueryEscape(valid), browser, modes("unavailable page", "303 to /order?a=1", "unavailable page")},
		{"forged pass-link exchange", "", "/order?wr_pass=" + url.QueryEscape(forged), browser, all("waiting")},
	}
	// Forward auth (X-Original-URI: the target), the same decisions.
	auth := []failCase{
		{"no pass", "", "/order", nil, modes("unavailable", "204:", "unavailable")},
		{"valid", "", "/order", bearer(valid), modes("204:a:holder", "204:a:holder", "unavailable")},
		{"forged", "", "/order", cookie(forged), all("refused")},
	}
	for _, mode := range []gate.FailMode{gate.FailClosed, gate.FailOpen, gate.FailStrict} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFlakyVerify(t, w)
			fg := newFailGate(t, w, f, mode)
			if got := what(get(fg.h, "/order", bearer(valid)...)); got != "order:a:holder" {
				t.Fatalf("up: %s", got)
			}
			if got := what(get(fg.h, "/order", browser...)); got != "waiting" {
				t.Fatalf("up, no pass: %s", got)
			}
			f.down.Store(true)
			fg.clock.Step(failRecheck) // the pass's recheck is due
			opened := 0
			for round := range 3 {
				opened += failRound(t, fg, mode, round, cases, auth)
			}
			if n := int(fg.opened.Load()); n != opened {
				t.Errorf("OnFailOpen called %d times, %d requests failed open", n, opened)
			}
			wantLines := 0
			if mode == gate.FailOpen {
				wantLines = 1
			}
			if n := fg.log.count(); n != wantLines {
				t.Errorf("%d log lines, want %d: %v", n, wantLines, fg.log.msgs)
			}

			// Back: within a second (one request a second still asks).
			f.down.Store(false)
			wait.For(t, 3*time.Second, "the gate to come back (a pass opens, no pass waits)", func() (bool, string) {
				withPass, noPass := what(get(fg.h, "/order", bearer(valid)...)), what(get(fg.h, "/order", browser...))
				return withPass == "order:a:holder" && noPass == "waiting", "with a pass " + withPass + ", without " + noPass
			})
		})
	}
}

// failRound sends fg each case through the middleware and each of auth
// through forward auth, checks what mode answers, and returns how many
// failed open.
func failRound(t *testing.T, fg *failGate, mode gate.FailMode, round int, cases, auth []failCase) (opened int) {
	t.Helper()
	for _, tc := range cases {
		method := cmp.Or(tc.method, "GET")
		rec := send(fg.h, method, tc.target, tc.header...)
		got := what(rec)
		if rec.Code == 303 && tc.name == "pass-link exchange" {
			got = "303 to " + rec.Header().Get("Location")
			if rec.Header().Get("Set-Cookie") != "" {
				t.Errorf("round %d: a pass-link exchange the room could not make set a cookie", round)
			}
		}
		if got != tc.want[mode] {
			t.Errorf("round %d, %s: %s, want %s", round, tc.name, got, tc.want[mode])
		}
		if got == "order:" {
			opened++
		}
	}
	for _, fc := range auth {
		rec := get(http.HandlerFunc(fg.g.ForwardAuth), "/gate/verify", append([]string{gate.HeaderOriginalURI, fc.target}, fc.header...)...)
		if got := what(rec); got != fc.want[mode] {
			t.Errorf("round %d, forward auth, %s: %s, want %s", round, fc.name, got, fc.want[mode])
		}
		if fc.want[mode] == "204:" {
			opened++
		}
	}
	return opened
}

// roomWhat names an answer in TestFailModesTwoRooms:
// "order:<sub>/<queue>/<pass it got>", "waiting <queue>", "refused
// <queue>", "unavailable", "303 <location>".
func roomWhat(r *httptest.ResponseRecorder) string {
	loc := r.Header().Get("Location")
	body := r.Body.String()
	switch {
	case r.Code == 200:
		return body
	case r.Code == 303 && strings.HasPrefix(loc, "/q/"):
		q, _, _ := strings.Cut(strings.TrimPrefix(loc, "/q/"), "?")
		return "waiting " + q
	case r.Code == 303:
		return "303 " + loc
	case r.Code == 401 && strings.Contains(body, `"pass_required"`):
		var e struct {
			Error struct {
				WaitingPage string `json:"waiting_page"`
			} `json:"error"`
		}
		_ = json.Unmarshal([]byte(body), &e)
		q, _, _ := strings.Cut(strings.TrimPrefix(e.Error.WaitingPage, "/q/"), "?")
		return "refused " + q
	case r.Code == 503 && r.Header().Get("Retry-After") != "":
		return "unavailable"
	}
	return r.Result().Status + " " + body
}

// roomsRound sends h each case and g's forward auth each of auth, checks
// what mode answers, and counts in wantOpened, by queue, those that
// failed open.
func roomsRound(t *testing.T, h http.Handler, g *gate.Gate, mode gate.FailMode, round int, passA string, cases, auth []failCase, wantOpened map[string]int) {
	t.Helper()
	for _, tc := range cases {
		rec := get(h, tc.target, tc.header...)
		got := roomWhat(rec)
		if got != tc.want[mode] {
			t.Errorf("round %d, %s: %s, want %s", round, tc.name, got, tc.want[mode])
		}
		if rec.Code == 303 && strings.Contains(rec.Header().Get("Set-Cookie"), passA) {
			t.Errorf("round %d, %s: A's pass set as a cookie: %s", round, tc.name, rec.Header().Get("Set-Cookie"))
		}
		if got == "order://" {
			q := "default"
			if strings.HasPrefix(tc.target, "/b/") {
				q = "b"
			}
			wantOpened[q]++
		}
	}
	for _, fc := range auth {
		rec := get(http.HandlerFunc(g.ForwardAuth), "/gate/verify", append([]string{gate.HeaderOriginalURI, fc.target}, fc.header...)...)
		got := fmt.Sprint(rec.Code)
		if rec.Code == 204 {
			got += " " + rec.Header().Get(gate.HeaderSub) + "/" + rec.Header().Get(gate.HeaderQueue)
		}
		if got != fc.want[mode] {
			t.Errorf("round %d, forward auth, %s: %s, want %s", round, fc.name, got, fc.want[mode])
		}
		if got == "204 /" {
			wantOpened["b"]++
		}
	}
}

// Two rooms (/b/ the room of queue b, every other path default's) while
// the waitroom's verify endpoint fails: a pass for one room never opens
// the other's paths in any mode, in no door (the middleware, forward auth,
// a pass-link exchange); failing open, its holder passes as anyone does, unchecked:
// no claims, the pass not handed on, counted under the room of the path.
func TestFailModesTwoRooms(t *testing.T) {
	w := newWaitroom(t)
	passA := w.issue(t, "default", time.Now().Add(time.Hour))
	passB := w.issue(t, "b", time.Now().Add(time.Hour))
	browser := []string{"Accept", "text/html"}
	cookieB := func(tok string) []string {
		return []string{"Cookie", gate.CookieName("b", true) + "=" + tok, "Accept", "text/html"}
	}
	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	cases := []failCase{
		{"A's pass on A's path", "", "/order", bearer(passA), modes("order:a:holder/default/"+passA, "order:a:holder/default/"+passA, "unavailable")},
		{"B's pass on B's path", "", "/b/order", bearer(passB), modes("order:a:holder/b/"+passB, "order:a:holder/b/"+passB, "unavailable")},
		{"A's pass on B's path", "", "/b/order", bearer(passA), modes("refused b", "order://", "refused b")},
		{"B's pass on A's path", "", "/order", bearer(passB), modes("refused default", "order://", "refused default")},
		{"A's pass in B's cookie", "", "/b/order", cookieB(passA), modes("waiting b", "order://", "waiting b")},
		{"A's pass in X-Waitroom-Pass on B's path", "", "/b/order", []string{gate.HeaderPass, passA}, modes("waiting b", "order://", "waiting b")},
		{"A's pass handed over on B's path", "", "/b/order?wr_pass=" + url.QueryEscape(passA), browser, modes("waiting b", "303 /b/order", "waiting b")},
		{"no pass on B's path", "", "/b/order", browser, modes("unavailable", "order://", "unavailable")},
		{"A's pass on /bx (A's: B's route ends at /b/)", "", "/bx", bearer(passA), modes("order:a:holder/default/"+passA, "order:a:holder/default/"+passA, "unavailable")},
	}
	// Forward auth: the room from X-Original-URI (the target).
	auth := []failCase{
		{"A's pass on B's path", "", "/b/order", bearer(passA), modes("401", "204 /", "401")},
		{"B's pass on B's path", "", "/b/order", bearer(passB), modes("204 a:holder/b", "204 a:holder/b", "503")},
		{"A's pass on A's path", "", "/order", bearer(passA), modes("204 a:holder/default", "204 a:holder/default", "503")},
	}
	for _, mode := range []gate.FailMode{gate.FailClosed, gate.FailOpen, gate.FailStrict} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFlakyVerify(t, w)
			var mu sync.Mutex
			opened := map[string]int{}
			clock := &gate.Clock{}
			g := newRoutesGate(t, w, "default", func(o *gate.Options) {
				o.Routes = []gate.Route{{Prefix: "/b/", Queue: "b"}}
				o.Bypass = nil
				o.VerifyURL = f.srv.URL + "/api/v1/verify"
				o.RecheckInterval = failRecheck
				gate.WithPassClock(o, clock)
				o.Client = &http.Client{Timeout: 300 * time.Millisecond}
				o.Fail = mode
				o.OnFailOpen = func(q string) { mu.Lock(); opened[q]++; mu.Unlock() }
				o.Logger = slog.New(slog.DiscardHandler)
			})
			// order answers the holder, the queue and the pass it was
			// handed (the claims', or any it can still read itself).
			h := g.Handler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				c, _ := gate.FromContext(r.Context())
				tok, _ := gate.PassFromContext(r.Context())
				if tok == "" {
					tok = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + r.Header.Get(gate.HeaderPass)
				}
				io.WriteString(rw, "order:"+c.Subject+"/"+c.Queue+"/"+tok)
			}))
			// Redis up: each pass opens its own room only.
			for _, tc := range []struct{ target, tok, want string }{
				{"/order", passA, "order:a:holder/default/" + passA},
				{"/b/order", passB, "order:a:holder/b/" + passB},
				{"/b/order", passA, "refused b"},
				{"/order", passB, "refused default"},
			} {
				if got := roomWhat(get(h, tc.target, bearer(tc.tok)...)); got != tc.want {
					t.Fatalf("up, %s: %s, want %s", tc.target, got, tc.want)
				}
			}
			f.down.Store(true)
			clock.Step(failRecheck) // the passes' rechecks are due
			wantOpened := map[string]int{}
			for round := range 3 {
				roomsRound(t, h, g, mode, round, passA, cases, auth, wantOpened)
			}
			mu.Lock()
			defer mu.Unlock()
			if fmt.Sprint(opened) != fmt.Sprint(wantOpened) {
				t.Errorf("OnFailOpen by queue: %v, want %v", opened, wantOpened)
			}
		})
	}
}

// A waitroom that stalls costs one request a second its client timeout;
// the others are decided at once, by the fail mode.
func TestFailModeBounded(t *testing.T) {
	w := newWaitroom(t)
	f := newFlakyVerify(t, w)
	fg := newFailGate(t, w, f, gate.FailClosed)
	valid := w.issue(t, "default", time.Now().Add(time.Hour))
	if got := what(get(fg.h, "/order", "Authorization", "Bearer "+valid)); got != "order:a:holder" {
		t.Fatalf("up: %s", got)
	}
	f.stalled.Store(true)
	fg.clock.Step(failRecheck) // the pass's recheck is due
	start := time.Now()
	if got := what(get(fg.h, "/order", "Authorization", "Bearer "+valid)); got != "order:a:holder" {
		t.Fatalf("first while stalled: %s", got)
	}
	first := time.Since(start)
	asked := f.asked.Load()
	start = time.Now()
	for range 200 {
		if got := what(get(fg.h, "/order", "Authorization", "Bearer "+valid)); got != "order:a:holder" {
			t.Fatalf("stalled: %s", got)
		}
	}
	rest := time.Since(start)
	t.Logf("first request %s (the client's timeout), 200 more in %s, %d more asked", first.Round(time.Millisecond), rest.Round(time.Millisecond), f.asked.Load()-asked)
	if first > time.Second || rest > 700*time.Millisecond {
		t.Fatalf("first request %s, 200 more in %s: the stall is not bounded", first, rest)
	}
}

func TestFailModeNames(t *testing.T) {
	for _, s := range []string{"closed", "open", "strict"} {
		if m, err := gate.ParseFailMode(s); err != nil || string(m) != s {
			t.Errorf("%q: %q %v", s, m, err)
		}
	}
	for _, s := range []string{"", "Open", "fail-open", " open"} {
		if _, err := gate.ParseFailMode(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	w := newWaitroom(t)
	if _, err := gate.New(context.Background(), gate.Options{Queue: "q", Issuer: "i", JWKSURL: w.srv.URL + "/.well-known/jwks.json", Fail: "opne"}); err == nil {
		t.Error("New took a fail mode that does not exist")
	}
}

// nearPass is a pass near valid, by how: 0 a character changed, 1 cut,
// 2 added to, 3 a part swapped for other's.
func nearPass(rng *rand.Rand, how int, valid, other string) []byte {
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	tok := []byte(valid)
	switch how {
	case 0:
		tok[rng.IntN(len(tok))] = b64[rng.IntN(len(b64))]
	case 1:
		tok = tok[:rng.IntN(len(tok))]
	case 2:
		tok = append(tok, b64[rng.IntN(len(b64))])
	case 3:
		p, o := strings.Split(valid, "."), strings.Split(other, ".")
		k := rng.IntN(3)
		p[k] = o[k]
		tok = []byte(strings.Join(p, "."))
	}
	return tok
}

// Generated paths and passes while the room is away, in FailOpen: a path
// the gate refuses when all is well (400 invalid_path) is refused the
// same; any other reaches the handler at the same clean path a valid pass
// takes it to. And in every mode, no pass but the valid one, however close
// to it, is taken for a pass holder's.
func TestFailOpenGenerated(t *testing.T) {
	w := newWaitroom(t)
	valid := w.issue(t, "default", time.Now().Add(time.Hour))
	bearer := []string{"Authorization", "Bearer " + valid}
	// next answers what it saw: the holder and the path.
	next := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		c, _ := gate.FromContext(r.Context())
		io.WriteString(rw, "order:"+c.Subject+" "+r.URL.Path)
	})
	serve := func(h http.Handler, target string, header ...string) (int, string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return -1, err.Error()
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.URL, r.RequestURI = u, target
		r.Header.Set("Accept", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code, rec.Body.String()
	}
	up := newFailGate(t, w, newFlakyVerify(t, w), gate.FailOpen).g.Handler(next)
	type away struct {
		mode gate.FailMode
		h    http.Handler
	}
	var aways []away
	for _, m := range []gate.FailMode{gate.FailOpen, gate.FailClosed, gate.FailStrict} {
		f := newFlakyVerify(t, w)
		fg := newFailGate(t, w, f, m)
		h := fg.g.Handler(next)
		f.down.Store(true)
		fg.clock.Step(failRecheck)    // the pass's recheck is due
		serve(h, "/order", bearer...) // the failed check: away
		aways = append(aways, away{m, h})
	}
	// keepAway renews what the gates know: without a Pinger, away holds
	// a few seconds after the last failed check.
	keepAway := func() {
		for _, a := range aways {
			serve(a.h, "/order", bearer...)
		}
	}
	rng := rand.New(rand.NewPCG(21, 1))
	checked := 0
	refused := 0
	for i := range 2000 {
		if i%200 == 0 {
			keepAway()
		}
		target := pathtest.Generate(rng, 6)
		upCode, upBody := serve(up, target, bearer...)
		if upCode == -1 {
			continue
		}
		checked++
		code, body := serve(aways[0].h, target)
		switch {
		case upCode == http.StatusBadRequest:
			refused++
			if code != upCode || body != upBody {
				t.Fatalf("%q: %d %s when all is well, %d %s failing open", target, upCode, upBody, code, body)
			}
		case upCode == 200:
			// The same clean path; nobody named.
			if want := "order: " + strings.TrimPrefix(upBody, "order:a:holder "); code != 200 || body != want {
				t.Fatalf("%q: reached the page as %q when all is well, %d %q failing open", target, upBody, code, body)
			}
		default:
			t.Fatalf("%q with a valid pass, all well: %d %s", target, upCode, upBody)
		}
	}
	// Passes near the valid one: a character changed, cut, added to, a
	// part swapped for another pass's.
	other := w.issue(t, "other", time.Now().Add(time.Hour))
	for i := range 600 {
		if i%200 == 0 {
			keepAway()
		}
		tok := nearPass(rng, i%4, valid, other)
		if string(tok) == valid || len(tok) == 0 { // none is no pass: through, failing open
			continue
		}
		for _, a := range aways {
			for _, hdr := range [][]string{{"Authorization", "Bearer " + string(tok)}, {"Cookie", gate.CookieName("default", true) + "=" + string(tok)}} {
				if code, body := serve(a.h, "/order", hdr...); code != http.StatusUnauthorized {
					t.Fatalf("%s, %s %q: %d %s, want 401", a.mode, hdr[0], tok, code, body)
				}
			}
		}
	}
	t.Logf("%d generated paths compared, %d of them refused as ambiguous", checked, refused)
	if refused == 0 || refused == checked {
		t.Fatalf("the run proves nothing: %d of %d paths refused", refused, checked)
	}
}
