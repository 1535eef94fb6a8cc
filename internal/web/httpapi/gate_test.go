package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

// upstream is an order page behind the gate that records what reached it.
type upstream struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []*http.Request
	release chan struct{} // lets /stream send its second event
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{release: make(chan struct{})}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.got = append(u.got, r.Clone(context.Background()))
		u.mu.Unlock()
		switch r.URL.Path {
		case "/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: one\n\n")
			w.(http.Flusher).Flush()
			<-u.release
			fmt.Fprint(w, "data: two\n\n")
		case "/slow":
			time.Sleep(2 * time.Second)
		case "/echo": // a protocol upgrade, as WebSockets make
			if r.Header.Get("Upgrade") != "echo" {
				http.Error(w, "upgrade required", http.StatusUpgradeRequired)
				return
			}
			conn, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			fmt.Fprint(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
			rw.Flush()
			line, _ := rw.ReadString('\n')
			fmt.Fprint(rw, "echo "+line)
			rw.Flush()
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Content-Security-Policy", "default-src 'none'")
			fmt.Fprintf(w, "<h1>order page</h1>%s", r.URL.RequestURI())
		}
	}))
	t.Cleanup(func() {
		select {
		case <-u.release:
		default:
			close(u.release)
		}
		u.srv.Close()
	})
	return u
}

func (u *upstream) last(t *testing.T) *http.Request {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.got) == 0 {
		t.Fatal("nothing reached the upstream")
	}
	return u.got[len(u.got)-1]
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.got)
}

// newGateEnv is a waitroom in gate mode in front of up (refill 1 per hour:
// the first enter is admitted, the rest wait).
func newGateEnv(t *testing.T, up *url.URL, timeout time.Duration) *env {
	t.Helper()
	rdb := redistest.Client(t)
	places, passes := newTrust(t, rdb)
	name := fmt.Sprintf("g%d", time.Now().UnixNano())
	store, err := queue.NewStore(rdb, []string{name}, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGate(t, rdb, store, name, passes, []string{"/static/"}, true)
	opts := Options{Places: places, Passes: passes, Gate: g, AdminToken: adminToken, ClientIP: behindProxy(t),
		Upstream: upstreamProxy(up, timeout, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)}
	return newEnvWithStore(t, rdb, store, name, opts)
}

// admittedPass enters once (the bucket's token) and returns the pass.
func (e *env) admittedPass() publicapi.TicketResponse {
	e.t.Helper()
	tk, _ := e.enterAnon()
	if tk.Status != queue.Entered || tk.Pass == "" {
		e.t.Fatalf("not admitted: %+v", tk)
	}
	return tk
}

func passCookie(e *env, token string) []string {
	return []string{"Cookie", e.passCookieName() + "=" + token}
}

// The whole reverse-proxy flow: refused to the waiting page, the pass
// handed over in the URL becomes a cookie, then requests reach the
// upstream with the holder named and the client's spoofed headers gone.
func TestGateModeFlow(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	upURL, _ := url.Parse(up.srv.URL)
	e := newGateEnv(t, upURL, 5*time.Second)

	r := e.do("GET", "/order?event=7", "", "Accept", "text/html")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/q/"+e.queue+"?return=%2Forder%3Fevent%3D7" {
		t.Fatalf("no pass: %d to %q", r.status, r.header.Get("Location"))
	}
	for _, tc := range [][]string{{"POST", ""}, {"GET", "application/json"}} {
		r := e.do(tc[0], "/order", "", "Accept", tc[1])
		wantError(t, r, 401, "pass_required")
		var body struct {
			Error struct {
				WaitingPage string `json:"waiting_page"`
			} `json:"error"`
		}
		_ = json.Unmarshal(r.body, &body)
		if !strings.HasPrefix(body.Error.WaitingPage, "/q/"+e.queue+"?return=") {
			t.Errorf("%s: 401 names waiting page %q", tc[0], body.Error.WaitingPage)
		}
	}
	if up.count() != 0 {
		t.Fatal("a request without a pass reached the upstream")
	}
	// The waiting page itself, with the return, is waitroom's.
	if r := e.do("GET", "/q/"+e.queue+"?return=%2Forder%3Fevent%3D7", ""); r.status != 200 {
		t.Fatalf("waiting page: %d", r.status)
	}

	tk := e.admittedPass()
	// Without a target URL, the gate queue's ticket says where to go on.
	if tk.NextPath != "/" || tk.TargetURL != "" {
		t.Fatalf("admitted in gate mode: next_path %q, target_url %q", tk.NextPath, tk.TargetURL)
	}
	r = e.do("GET", "/order?event=7&wr_pass="+url.QueryEscape(tk.Pass), "")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/order?event=7" {
		t.Fatalf("hand-over: %d to %q", r.status, r.header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, line := range r.header.Values("Set-Cookie") {
		if c, err := http.ParseSetCookie(line); err == nil && c.Name == e.passCookieName() {
			cookie = c
		}
	}
	if cookie == nil || cookie.Value != tk.Pass || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Path != "/" ||
		cookie.Expires.IsZero() || cookie.Expires.After(time.Now().Add(time.Hour+time.Second)) {
		t.Fatalf("pass cookie %+v", cookie)
	}
	if up.count() != 0 {
		t.Fatal("the pass link reached the upstream, wr_pass and all")
	}

	r = e.do("GET", "/order?event=7", "", append(passCookie(e, tk.Pass),
		"X-Waitroom-Sub", "a:spoofed", "X-Waitroom-Admin", "yes", "X-Forwarded-For", "6.6.6.6")...)
	if r.status != 200 || !strings.Contains(string(r.body), "order page") {
		t.Fatalf("with the cookie: %d %s", r.status, r.body)
	}
	if csp := r.header.Values("Content-Security-Policy"); len(csp) != 1 || csp[0] != "default-src 'none'" {
		t.Errorf("the upstream's CSP came back as %q", csp)
	}
	got := up.last(t)
	if got.Header.Get(gate.HeaderSub) != tk.UserID || got.Header.Get(gate.HeaderQueue) != e.queue || got.Header.Get("X-Waitroom-Admin") != "" {
		t.Errorf("upstream saw X-Waitroom-Sub %q, -Queue %q, -Admin %q", got.Header.Get(gate.HeaderSub), got.Header.Get(gate.HeaderQueue), got.Header.Get("X-Waitroom-Admin"))
	}
	if got.Header.Get("X-Forwarded-Proto") != "http" || got.Header.Get("X-Forwarded-Host") == "" || strings.Contains(got.Header.Get("X-Forwarded-For"), "6.6.6.6") {
		t.Errorf("forwarded headers %v", got.Header)
	}
	if r := e.do("POST", "/order/buy", "{}", bearerHeader(tk.Pass)...); r.status != 200 {
		t.Errorf("bearer pass: %d", r.status)
	}

	// Bypass paths need no pass; waitroom's own paths are never proxied.
	if r := e.do("GET", "/static/app.css", ""); r.status != 200 {
		t.Errorf("bypass: %d", r.status)
	}
	n := up.count()
	for _, p := range []string{"/healthz", "/api/v1/queues/" + e.queue, "/_waitroom/static/style.css", "/api/v1/nothing"} {
		e.do("GET", p, "", passCookie(e, tk.Pass)...)
	}
	if up.count() != n {
		t.Error("one of waitroom's own paths reached the upstream")
	}
	// / is the upstream's in gate mode.
	if r := e.do("GET", "/", "", passCookie(e, tk.Pass)...); r.status != 200 || !strings.Contains(string(r.body), "order page") {
		t.Errorf("/ in gate mode: %d %s", r.status, r.body)
	}

	// Leaving revokes the pass: the gate closes within 5 s.
	if r := e.do("DELETE", "/api/v1/queues/"+e.queue+"/place", "", bearerHeader(tk.PlaceToken)...); r.status != 204 {
		t.Fatal(r.status)
	}
	closed := time.Now()
	wait.For(t, 5*time.Second, "the gate to close after the leave", func() (bool, string) {
		return e.do("GET", "/order", "", passCookie(e, tk.Pass)...).status == http.StatusSeeOther, ""
	})
	t.Logf("gate closed %s after the leave", time.Since(closed).Round(time.Millisecond))
	r = e.do("GET", "/order", "", passCookie(e, tk.Pass)...)
	if del := r.header.Get("Set-Cookie"); !strings.Contains(del, e.passCookieName()+"=;") || !strings.Contains(del, "Max-Age=0") {
		t.Errorf("a refused pass cookie is not deleted: %q", del)
	}
}

// Each way a request can lack a valid pass is refused, and nothing of it
// reaches the upstream.
func TestGateModeRefuses(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	upURL, _ := url.Parse(up.srv.URL)
	e := newGateEnv(t, upURL, 5*time.Second)
	srv := e
	other := newEnv(t, e.rdb, slow, testTimeout, Options{Places: srv.places, Passes: srv.passes})
	tk := e.admittedPass()
	c, err := srv.passes.Verify(tk.Pass)
	if err != nil {
		t.Fatal(err)
	}
	otherQueue := other.admittedPass()
	expired, _ := srv.passes.Issue(e.queue, tk.UserID, c.AdmittedAt, time.Now().Add(-time.Second))
	foreign, _ := newPasses(t).Issue(e.queue, tk.UserID, c.AdmittedAt, c.Expires)

	for name, token := range map[string]string{
		"forged":        flipChar(tk.Pass, len(tk.Pass)-30),
		"another key":   foreign,
		"another queue": otherQueue.Pass,
		"expired":       expired,
		"place token":   tk.PlaceToken,
		"garbage":       "x",
		"another admission": func() string {
			p, _ := srv.passes.Issue(e.queue, tk.UserID, c.AdmittedAt.Add(time.Millisecond), c.Expires)
			return p
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			if r := e.do("GET", "/order", "", passCookie(e, token)...); r.status != http.StatusSeeOther {
				t.Errorf("cookie: %d", r.status)
			}
			wantError(t, e.do("GET", "/order", "", bearerHeader(token)...), 401, "pass_required")
			// Handed over in the URL: refused, and the return drops it.
			r := e.do("GET", "/order?x=1&wr_pass="+url.QueryEscape(token), "")
			if r.status != http.StatusSeeOther || r.header.Get("Location") != "/q/"+e.queue+"?return=%2Forder%3Fx%3D1" || r.header.Get("Set-Cookie") != "" {
				t.Errorf("hand-over: %d to %q, cookie %q", r.status, r.header.Get("Location"), r.header.Get("Set-Cookie"))
			}
			if r := e.do("GET", "/gate/verify", "", passCookie(e, token)...); r.status != 401 {
				t.Errorf("/gate/verify: %d", r.status)
			}
		})
	}
	// A pass in the URL of a bypassed path is taken (or refused) like any
	// hand-over: it never travels on to the upstream.
	if r := e.do("GET", "/static/app.css?wr_pass="+url.QueryEscape(tk.Pass), ""); r.status != http.StatusSeeOther || r.header.Get("Location") != "/static/app.css" {
		t.Errorf("wr_pass on a bypassed path: %d to %q", r.status, r.header.Get("Location"))
	}
	if r := e.do("GET", "/static/app.css?wr_pass=forged", ""); r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/q/") {
		t.Errorf("a forged wr_pass on a bypassed path: %d to %q", r.status, r.header.Get("Location"))
	}
	// A valid pass handed over on one of waitroom's own paths is not taken.
	if r := e.do("GET", "/healthz?wr_pass="+url.QueryEscape(tk.Pass), ""); r.status != 200 || r.header.Get("Set-Cookie") != "" {
		t.Errorf("wr_pass on /healthz: %d, cookie %q", r.status, r.header.Get("Set-Cookie"))
	}
	if up.count() != 0 {
		t.Fatalf("%d refused requests reached the upstream", up.count())
	}
	// Open redirects: the waiting page refuses a return that is not a path here.
	for _, ret := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)", "evil", "/%0d%0aSet-Cookie:x"} {
		r := e.do("GET", "/q/"+e.queue+"?return="+url.QueryEscape(ret), "")
		if ret == "/%0d%0aSet-Cookie:x" {
			// Escaped control characters stay escaped: a harmless path.
			if r.status != 200 {
				t.Errorf("return %q: %d", ret, r.status)
			}
			continue
		}
		wantError(t, r, 400, "invalid_return")
	}
	wantError(t, e.do("GET", "/q/"+e.queue+"?return=/a&return=/b", ""), 400, "invalid_return")
}

func TestForwardAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout, Options{AdminToken: adminToken})
	wantError(t, e.do("GET", "/gate/verify", ""), 401, "pass_required")
	tk := e.admittedPass()
	for _, h := range [][]string{passCookie(e, tk.Pass), bearerHeader(tk.Pass)} {
		r := e.do("GET", "/gate/verify", "", h...)
		if r.status != http.StatusNoContent || r.header.Get(gate.HeaderSub) != tk.UserID || r.header.Get(gate.HeaderQueue) != e.queue {
			t.Fatalf("valid pass: %d %v", r.status, r.header)
		}
	}
	// Without gate mode, a pass handed over on another path still becomes
	// the cookie (a proxy doing forward auth sends such requests here).
	r := e.do("GET", "/order?wr_pass="+url.QueryEscape(tk.Pass), "")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/order" || !strings.Contains(r.header.Get("Set-Cookie"), e.passCookieName()+"=") {
		t.Fatalf("hand-over without gate mode: %d %v", r.status, r.header)
	}
	// ... but other paths are not served.
	wantError(t, e.do("GET", "/order", ""), 404, "not_found")

	// /gate/refused answers for a proxy as the gate would; the original
	// URI only ever becomes a same-site return, without any wr_pass.
	for orig, want := range map[string]string{
		"/order?a=1&b=2":        "/q/" + e.queue + "?return=%2Forder%3Fa%3D1%26b%3D2",
		"/order?wr_pass=x&a=1":  "/q/" + e.queue + "?return=%2Forder%3Fa%3D1",
		"https://evil.example/": "/q/" + e.queue + "?return=%2F",
		"":                      "/q/" + e.queue + "?return=%2F",
	} {
		r := e.do("GET", "/gate/refused", "", "X-Original-URI", orig, "Accept", "text/html")
		if r.status != http.StatusSeeOther || r.header.Get("Location") != want {
			t.Errorf("refused %q: %d to %q, want %q", orig, r.status, r.header.Get("Location"), want)
		}
	}
	wantError(t, e.do("POST", "/gate/refused", "", "X-Original-URI", "/buy"), 401, "pass_required")
	// A path that is not clean is refused: nginx forwards it as sent.
	for _, orig := range []string{"//evil.example/x", "/static/../order", "/static/%2e%2e/order", "/a/..;/b"} {
		wantError(t, e.do("GET", "/gate/verify", "", append(passCookie(e, tk.Pass), "X-Original-URI", orig)...), 401, "invalid_path")
		wantError(t, e.do("GET", "/gate/refused", "", "X-Original-URI", orig, "Accept", "text/html"), 400, "invalid_path")
	}

	// The operator removes the user: the gate closes within 5 s.
	if r := e.do("DELETE", "/admin/v1/queues/"+e.queue+"/users/"+tk.UserID, "", "Authorization", "Bearer "+adminToken); r.status != 204 {
		t.Fatal(r.status)
	}
	wait.For(t, 5*time.Second, "the removed user's pass to be refused", func() (bool, string) {
		return e.do("GET", "/gate/verify", "", passCookie(e, tk.Pass)...).status == 401, ""
	})
}

// The upstream down, slow, streaming or upgrading the connection: a bounded
// 502, never a hang; streams and upgrades pass through.
func TestGateModeUpstream(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	upURL, _ := url.Parse(up.srv.URL)
	e := newGateEnv(t, upURL, 500*time.Millisecond)
	tk := e.admittedPass()
	auth := passCookie(e, tk.Pass)

	start := time.Now()
	r := e.do("GET", "/slow", "", auth...)
	if r.status != http.StatusBadGateway {
		t.Fatalf("slow upstream: %d", r.status)
	}
	t.Logf("slow upstream answered 502 after %s (timeout 500ms)", time.Since(start).Round(time.Millisecond))
	wantError(t, r, 502, "upstream_unavailable")

	// A stream: the first event arrives before the upstream sends the second.
	req, _ := http.NewRequest("GET", e.srv.URL+"/stream", nil)
	req.Header.Set("Cookie", auth[1])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: one\n" {
		t.Fatalf("first event %q, %v", line, err)
	}
	close(up.release)
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if !strings.Contains(string(rest), "data: two") {
		t.Fatalf("second event: %q", rest)
	}

	// An upgraded connection (WebSockets work the same way).
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\nCookie: %s\r\n\r\n", auth[1])
	cr := bufio.NewReader(conn)
	upResp, err := http.ReadResponse(cr, nil)
	if err != nil || upResp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", upResp, err)
	}
	fmt.Fprint(conn, "hello\n")
	if line, err := cr.ReadString('\n'); err != nil || line != "echo hello\n" {
		t.Fatalf("echo %q, %v", line, err)
	}

	// The upstream gone: 502 at once, HTML for browsers, JSON for the rest.
	up.srv.Close()
	r = e.do("GET", "/order", "", append(auth, "Accept", "text/html")...)
	if r.status != http.StatusBadGateway || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("upstream down, browser: %d %v", r.status, r.header)
	}
	wantError(t, e.do("GET", "/order", "", auth...), 502, "upstream_unavailable")
}

// upstreamProxy is the reverse proxy to u at its default limits, telling
// observe (nil: nobody) of each upstream answer, as cmd/waitroom builds it.
func upstreamProxy(u *url.URL, timeout time.Duration, log *slog.Logger, observe proxy.Observe) http.Handler {
	h, err := proxy.NewHandler(proxy.Options{Upstream: u, Timeout: timeout, Log: log, Observe: observe, Limits: proxy.DefaultLimits()})
	if err != nil {
		panic(err) // the default limits are valid (TestGateLimits)
	}
	return h
}
