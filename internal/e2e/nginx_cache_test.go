package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/httpin/pathtest"
)

// The shipped nginx config keeps /gate/verify's 204s for a second. These
// tests run it for real: the answers it keeps go only to the pass, path,
// host and client they were given for, carry that pass's identity, and a
// revoked pass still stops opening within 5 s.

// authInputs is everything a forward-auth answer may depend on, as one
// string: the host, the path as sent, the client's address chain, the
// cookies and the Authorization header. The fake verify below derives its
// answer from it; the order site derives it again from what reached it.
func authInputs(host, target, xff string, cookies []string, authz string) string {
	path, _, _ := strings.Cut(target, "?")
	sum := sha256.Sum256([]byte(strings.Join([]string{host, path, xff, strings.Join(cookies, "; "), authz}, "\n")))
	return hex.EncodeToString(sum[:8])
}

// A property of the cache key, with a real nginx and the shipped config in
// front of a fake waitroom whose verify answers each combination of
// inputs its own way (204 naming the inputs, 401 or 503): over generated
// requests that vary the pass cookie, the other cookies, the host, the
// path as sent, the client's address chain and the Authorization header,
// every request that reaches the order site carries the identity verify
// gave for exactly its inputs, and a request without a pass cookie, or
// whose answer was a 401 or 503, always reached verify itself.
func TestNginxAuthCacheKeyProperty(t *testing.T) {
	t.Parallel()
	bin := nginxPath(t)
	var mu sync.Mutex
	asked := map[string]bool{}     // X-Test-Seq values verify saw
	answered := map[string]int{}   // X-Test-Seq -> verify's status
	reached := map[string]string{} // X-Test-Seq -> problem, "" fine
	var calls int
	waitroom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/gate/verify" {
			w.WriteHeader(http.StatusUnauthorized) // /gate/refused
			return
		}
		in := authInputs(r.Host, r.Header.Get(gate.HeaderOriginalURI), r.Header.Get("X-Forwarded-For"), r.Header.Values("Cookie"), r.Header.Get("Authorization"))
		status := http.StatusNoContent
		hasPass := strings.Contains(strings.Join(r.Header.Values("Cookie"), ";"), "wr_pass_")
		switch {
		case !hasPass && strings.HasPrefix(r.Header.Get(gate.HeaderOriginalURI), "/static/"):
			// a bypassed path: 204 without identity
		case !hasPass, in[0] < '4':
			status = http.StatusUnauthorized
		case in[0] < '6':
			status = http.StatusServiceUnavailable
		}
		mu.Lock()
		calls++
		seq := r.Header.Get("X-Test-Seq")
		asked[seq] = true
		answered[seq] = status
		n := calls
		mu.Unlock()
		if status == http.StatusNoContent && hasPass {
			w.Header().Set(gate.HeaderSub, fmt.Sprintf("%s:%d", in, n))
			w.Header().Set(gate.HeaderQueue, "q")
		}
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
	}))
	t.Cleanup(waitroom.Close)
	order := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := authInputs(r.Host, r.RequestURI, r.Header.Get("X-Forwarded-For"), r.Header.Values("Cookie"), r.Header.Get("Authorization"))
		sub := r.Header.Get(gate.HeaderSub)
		problem := ""
		if sub != "" && !strings.HasPrefix(sub, in+":") {
			problem = fmt.Sprintf("identity %q for inputs %s", sub, in)
		}
		mu.Lock()
		reached[r.Header.Get("X-Test-Seq")] = problem
		mu.Unlock()
	}))
	t.Cleanup(order.Close)
	base := startNginx(t, bin, strings.TrimPrefix(waitroom.URL, "http://"), strings.TrimPrefix(order.URL, "http://"))
	addr := strings.TrimPrefix(base, "http://")

	hosts := []string{"shop.example", "other.example", "Shop.Example", addr}
	paths := []string{"/order", "/order/", "/Order", "/x/../order", "/order?seat=1", "/%6Frder", "/sale/a", "/static/app.css", "//order"}
	xffs := []string{"", "10.0.0.1", "10.0.0.2", "10.0.0.1, 10.0.0.2"}
	cookies := [][]string{
		nil,
		{"wr_pass_q=PASS-A"},
		{"wr_pass_q=PASS-B"},
		{"wr_pass_q=PASS-A; theme=dark"},
		{"theme=dark"},
		{"wr_pass_q=PASS-A; wr_pass_q=PASS-B"},
		{"wr_pass_q=PASS-A", "wr_pass_r=PASS-C"},
		{"__Host-wr_pass_q=PASS-A"},
	}
	authzs := []string{"", "", "", "Bearer PASS-A"}
	rng := rand.New(rand.NewPCG(21, 1))
	const n = 600
	refusedAsked, hits := 0, 0
	for i := range n {
		seq := fmt.Sprint(i)
		host, path := hosts[rng.IntN(len(hosts))], paths[rng.IntN(len(paths))]
		hdr := []string{"X-Test-Seq", seq}
		if x := xffs[rng.IntN(len(xffs))]; x != "" {
			hdr = append(hdr, "X-Forwarded-For", x)
		}
		cs := cookies[rng.IntN(len(cookies))]
		for _, c := range cs {
			hdr = append(hdr, "Cookie", c)
		}
		a := authzs[rng.IntN(len(authzs))]
		if a != "" {
			hdr = append(hdr, "Authorization", a)
		}
		if _, err := pathtest.GetHost(addr, host, path, hdr...); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		problem, got := reached[seq]
		sawVerify, status := asked[seq], answered[seq]
		mu.Unlock()
		if problem != "" {
			t.Fatalf("request %d (%s %s, cookies %q, %q): %s", i, host, path, cs, a, problem)
		}
		pass := strings.Contains(strings.Join(cs, ";"), "wr_pass_") && a == ""
		switch {
		case !sawVerify && !pass:
			t.Fatalf("request %d (%s %s, cookies %q, %q) without a pass cookie was answered from the cache", i, host, path, cs, a)
		case !sawVerify:
			hits++
		case status != http.StatusNoContent && got:
			t.Fatalf("request %d: verify answered %d and it reached the order site", i, status)
		case status != http.StatusNoContent:
			refusedAsked++
		}
	}
	t.Logf("%d requests, %d answered from nginx's cache, %d refusals asked", n, hits, refusedAsked)
	if hits == 0 || refusedAsked == 0 {
		t.Fatalf("the run proves nothing: %d cache hits, %d refusals", hits, refusedAsked)
	}
	// A refusal is never kept: the same refused inputs ask verify again.
	mu.Lock()
	before := calls
	mu.Unlock()
	for range 3 {
		if st, err := pathtest.GetHost(addr, "shop.example", "/order", "Cookie", "theme=dark"); err != nil || st == http.StatusOK {
			t.Fatalf("without a pass: %d %v", st, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != before+3 {
		t.Fatalf("three refused requests asked verify %d times", calls-before)
	}
}

// Two users' passes through the cache each get their own identity at the
// order site, a path nginx would forward as sent but verify refuses is not
// opened by a cached 204 for its clean form, and the cache spares
// waitroom most checks.
func TestNginxAuthCacheIdentities(t *testing.T) {
	t.Parallel()
	bin := nginxPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(2)})
	var mu sync.Mutex
	bad := ""
	got := 0
	order := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := r.Header.Get("X-Test-User")
		mu.Lock()
		defer mu.Unlock()
		got++
		if sub := r.Header.Get(gate.HeaderSub); sub != want || r.Header.Get(gate.HeaderQueue) != s.queue {
			bad = fmt.Sprintf("user %q reached the order site as %q of %q", want, sub, r.Header.Get(gate.HeaderQueue))
		}
	}))
	t.Cleanup(order.Close)
	base := startNginx(t, bin, strings.TrimPrefix(s.url, "http://"), strings.TrimPrefix(order.URL, "http://"))
	addr := strings.TrimPrefix(base, "http://")

	type user struct{ id, pass string }
	var users []user
	for range 2 {
		u := enterUser(t, s)
		users = append(users, u)
	}
	cookie := func(u user) string { return gate.CookieName(s.queue, false) + "=" + u.pass }
	verifies := func() int {
		return len(s.calls.matching(func(c call) bool { return c.path == "/gate/verify" }))
	}
	v0 := verifies()
	const rounds = 30
	for i := range rounds {
		for _, u := range users {
			st, err := pathtest.GetHost(addr, "shop.example", "/order", "Cookie", cookie(u), "X-Test-User", u.id, "X-Waitroom-Sub", "spoofed")
			if err != nil || st != http.StatusOK {
				t.Fatalf("round %d, user %s: %d %v", i, u.id, st, err)
			}
		}
		// No pass right after a cached 204 for the same path: refused.
		if st, err := pathtest.GetHost(addr, "shop.example", "/order", "X-Test-User", ""); err != nil || st == http.StatusOK {
			t.Fatalf("round %d without a pass: %d %v", i, st, err)
		}
	}
	mu.Lock()
	if bad != "" {
		t.Fatal(bad)
	}
	if got != rounds*len(users) {
		t.Fatalf("%d requests reached the order site, want %d", got, rounds*len(users))
	}
	mu.Unlock()
	v := verifies() - v0
	t.Logf("%d requests with a pass, %d without, %d verify calls", rounds*len(users), rounds, v)
	if v >= rounds*(len(users)+1) {
		t.Fatalf("%d verify calls for %d requests: nothing was answered from the cache", v, rounds*(len(users)+1))
	}
	// /x/../order reaches the order site as sent; verify refuses it as
	// ambiguous, and the 204 cached for /order must not open it.
	for range 3 {
		if st, err := pathtest.GetHost(addr, "shop.example", "/x/../order", "Cookie", cookie(users[0]), "X-Test-User", users[0].id); err != nil || st == http.StatusOK {
			t.Fatalf("/x/../order with a pass cached for /order: %d %v", st, err)
		}
	}
}

// A revoked pass stops opening within 5 s through the shipped config while
// its holder keeps the cache warm (a request every 20 ms), and stays shut.
func TestNginxAuthCacheRevocation(t *testing.T) {
	t.Parallel()
	bin := nginxPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1)})
	order := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(order.Close)
	base := startNginx(t, bin, strings.TrimPrefix(s.url, "http://"), strings.TrimPrefix(order.URL, "http://"))
	addr := strings.TrimPrefix(base, "http://")
	u := enterUser(t, s)
	cookie := gate.CookieName(s.queue, false) + "=" + u.pass
	get := func() int {
		st, err := pathtest.GetHost(addr, "shop.example", "/order", "Cookie", cookie)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	warm := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(warm) {
		if st := get(); st != http.StatusOK {
			t.Fatalf("admitted: %d", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	revoked := time.Now()
	if err := s.store.Remove(context.Background(), s.queue, u.id); err != nil {
		t.Fatal(err)
	}
	for get() == http.StatusOK {
		if time.Since(revoked) > 5*time.Second {
			t.Fatal("the revoked pass still opens the site after 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(revoked)
	t.Logf("the revoked pass stopped opening after %v", took.Round(time.Millisecond))
	shut := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(shut) {
		if st := get(); st == http.StatusOK {
			t.Fatal("the revoked pass opened the site again")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// enterUser admits one user straight at waitroom and returns their
// member id and pass.
func enterUser(t *testing.T, s *stack) struct{ id, pass string } {
	t.Helper()
	resp, err := http.Post(s.url+"/api/v1/queues/"+s.queue+"/enter", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tk struct {
		UserID string `json:"user_id"`
		Status string `json:"status"`
		Pass   string `json:"pass"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tk); err != nil || tk.Status != "ENTERED" || tk.Pass == "" {
		t.Fatalf("not admitted: %v %+v", err, tk)
	}
	return struct{ id, pass string }{tk.UserID, tk.Pass}
}
