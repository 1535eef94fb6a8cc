package httpapi

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck/pathtest"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/trust/place"
)

// newRecordingGateEnv is a waitroom in gate mode (bypass /static/) in front
// of a recorder.
func newRecordingGateEnv(t *testing.T) (*env, *pathtest.Recorder) {
	t.Helper()
	rec := &pathtest.Recorder{}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	return newGateEnv(t, u, 5*time.Second), rec
}

// No generated path reaches the upstream through the reverse-proxy gate
// without a pass unless every known server's resolution of what it
// received is under the bypass prefix; what reaches it with a pass is the
// clean path the gate checked.
func TestGatePathsProperty(t *testing.T) {
	t.Parallel()
	e, rec := newRecordingGateEnv(t)
	tk := e.admittedPass()
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	rng := rand.New(rand.NewPCG(3, 5))
	const n = 3000
	for i := range n {
		var hdr []string
		if i%5 == 0 {
			hdr = passCookie(e, tk.Pass)
		}
		if _, err := pathtest.Get(addr, pathtest.Generate(rng, 6), hdr...); err != nil {
			t.Fatal(err)
		}
	}
	passless := rec.Check(t)
	seen := rec.Seen()
	for _, s := range seen {
		p, _, _ := strings.Cut(s.Target, "?")
		if s.Sub != "" && !reqcheck.IsCanonical(p) {
			t.Errorf("the upstream got %q, not the clean path the gate checked", s.Target)
		}
	}
	t.Logf("%d requests, %d reached the upstream, %d without a pass", n, len(seen), passless)
	if passless == 0 || len(seen) == passless {
		t.Fatalf("the run proves nothing: %d passless, %d with a pass", passless, len(seen)-passless)
	}
	// The examples of the report, each 400 invalid_path.
	for _, p := range []string{"/static/%2e%2e/order", "/static/..%2forder", "/static%2f..%2forder", "/static/..;/order", "/static/%252e%252e/order", "/static/..%5corder", "/static/%00"} {
		if st, _ := pathtest.Get(addr, p); st != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", p, st)
		}
	}
}

// The upstream learns who the user is from X-Waitroom-Sub alone, and gets
// the pass that was checked in X-Waitroom-Pass: no waitroom cookie, no
// bearer pass, no underscore spelling of the headers, and no pass in a
// POST's request line.
func TestGateStripsCredentials(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	u, _ := url.Parse(up.srv.URL)
	e := newGateEnv(t, u, 5*time.Second)
	tk := e.admittedPass()
	cookies := e.passCookieName() + "=" + tk.Pass + "; site=1; " + place.CookieName(e.queue, false) + "=" + tk.PlaceToken +
		"; __Host-wr_place_other=x; wr_pass_other=y; theme=dark"
	for _, h := range [][]string{
		{"Cookie", cookies, "X_Waitroom_Sub", "forged", "x_waitroom_queue", "forged", "X-Waitroom-Sub", "forged", "X_Waitroom_Pass", "forged"},
		{"Authorization", "Bearer " + tk.Pass, "Cookie", "site=1; theme=dark"},
		{gate.HeaderPass, tk.Pass, "Cookie", "site=1; theme=dark"}, // read like a bearer token
	} {
		if r := e.do("GET", "/order", "", h...); r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		got := up.last(t)
		if c := got.Header.Get("Cookie"); c != "site=1; theme=dark" {
			t.Errorf("cookies reaching the upstream: %q", c)
		}
		if a := got.Header.Get("Authorization"); a != "" {
			t.Errorf("Authorization reached the upstream: %q", a)
		}
		if p := got.Header.Values(gate.HeaderPass); len(p) != 1 || p[0] != tk.Pass {
			t.Errorf("X-Waitroom-Pass: %q, want the checked pass", p)
		}
		for k, v := range got.Header {
			if strings.EqualFold(strings.ReplaceAll(k, "_", "-"), gate.HeaderSub) && (k != gate.HeaderSub || v[0] != tk.UserID) {
				t.Errorf("header %s: %q reached the upstream", k, v)
			}
			if strings.Contains(strings.ToLower(k), "waitroom_") {
				t.Errorf("header %s: %q reached the upstream", k, v)
			}
		}
	}
	if r := e.do("POST", "/buy?a=1&wr_pass="+url.QueryEscape(tk.Pass), "", passCookie(e, tk.Pass)...); r.status != 200 {
		t.Fatalf("POST: %d", r.status)
	}
	if got := up.last(t); got.URL.RawQuery != "a=1" {
		t.Errorf("a POST reached the upstream with %q", got.URL.RawQuery)
	}
}

// A hand-over link is exchanged once across replicas: two replicas over
// one Redis, five browsers with one link, one cookie.
func TestGatePassLinkSingleUseAcrossReplicas(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	u, _ := url.Parse(up.srv.URL)
	a := newGateEnv(t, u, 5*time.Second)
	s := a
	b := newEnvWithStore(t, a.rdb, a.store, a.queue, Options{
		Places: s.places, Passes: s.passes, ClientIP: behindProxy(t),
		Gate:     newTestGate(t, a.rdb, a.store, a.queue, s.passes, nil, true),
		Upstream: upstreamProxy(u, 5*time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)), nil),
	})
	tk := a.admittedPass()
	link := "/order?wr_pass=" + url.QueryEscape(tk.Pass)
	admitted := 0
	for i := range 5 {
		e := []*env{a, b}[i%2]
		r := e.do("GET", link, "")
		if strings.Contains(r.header.Get("Set-Cookie"), e.passCookieName()+"="+tk.Pass) {
			admitted++
		}
	}
	if admitted != 1 {
		t.Fatalf("one link admitted %d of 5 browsers over two replicas, want 1", admitted)
	}
}

// A pass used from more than WAITROOM_PASS_MAX_CLIENTS (3) addresses is
// cancelled: the fourth address is refused at once, and its holder, back
// at the first address, is sent to the waiting page told why. Three
// addresses, and several IPv6 addresses of one /64, are fine.
func TestGateSharedPassRevoked(t *testing.T) {
	t.Parallel()
	e, _ := newRecordingGateEnv(t)
	tk := e.admittedPass()
	from := func(addr string) response {
		return e.do("GET", "/order", "", append(passCookie(e, tk.Pass), "X-Forwarded-For", addr, "Accept", "text/html")...)
	}
	for _, addr := range []string{"198.18.0.1", "198.18.0.2", "2001:db8:1:2::1", "2001:db8:1:2::99", "2001:db8:1:2:aaaa::7", "198.18.0.1"} {
		if r := from(addr); r.status != 200 {
			t.Fatalf("%s: %d %s (three networks are allowed)", addr, r.status, r.body)
		}
	}
	r := from("198.18.0.4")
	if r.status != http.StatusSeeOther || !strings.Contains(r.header.Get("Location"), "reason=used_elsewhere") {
		t.Fatalf("fourth address: %d %q", r.status, r.header.Get("Location"))
	}
	wait.For(t, 5*time.Second, "the first address to be sent away as the pass is revoked", func() (bool, string) {
		r := from("198.18.0.1")
		return r.status == http.StatusSeeOther && strings.Contains(r.header.Get("Location"), "reason=used_elsewhere"), ""
	})
	if r := e.do("GET", "/order", "", append(passCookie(e, tk.Pass), "X-Forwarded-For", "198.18.0.2", "Accept", "application/json")...); r.status != 401 || !strings.Contains(string(r.body), "pass_used_elsewhere") {
		t.Fatalf("API client: %d %s", r.status, r.body)
	}
}

// With Secure cookies the place cookie is __Host-wr_place_{queue}; the
// plain name is not read, and the cookie twice is refused.
func TestPlaceCookieHostPrefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{CookieSecure: true})
	tk, r := e.enterAnon()
	c := placeCookie(t, r, e.queue)
	if c.Name != "__Host-wr_place_"+e.queue || !c.Secure || c.Path != "/" || c.Domain != "" {
		t.Fatalf("place cookie %+v", c)
	}
	status := "/api/v1/queues/" + e.queue + "/status"
	if r := e.do("GET", status, "", "Cookie", c.Name+"="+tk.PlaceToken); r.status != 200 {
		t.Fatalf("one cookie: %d %s", r.status, r.body)
	}
	wantError(t, e.do("GET", status, "", "Cookie", c.Name+"="+tk.PlaceToken+"; "+c.Name+"="+tk.PlaceToken), 401, "invalid_place")
	wantError(t, e.do("GET", status, "", "Cookie", place.CookieName(e.queue, false)+"="+tk.PlaceToken), 401, "invalid_place")
}
