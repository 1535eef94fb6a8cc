package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck/pathtest"
)

// The shipped nginx config keeps /gate/verify's 204s for a second. These
// tests run it for real: the answers it keeps go only to the pass, path,
// host and client they were given for, carry that pass's identity, and a
// revoked pass still stops opening within 5 s.

// The rig of the cache-key tests: a real nginx with the shipped config in
// front of a fake waitroom whose verify answers each combination of what
// the real one reads its own way (204 naming the combination, 401 or
// 503), and an order site that derives the combination again from what
// reached it.

// roomPass is the pass a request for room q carries as waitroom's gate
// reads it from cookies: the value of its one cookie named wr_pass_q (two
// are refused: "").
func roomPass(h http.Header) string {
	cs := (&http.Request{Header: h}).CookiesNamed("wr_pass_q")
	if len(cs) != 1 {
		return ""
	}
	return cs[0].Value
}

// clientOf is the client as waitroom reads it behind the shipped nginx
// (the one trusted proxy): the last hop of X-Forwarded-For, the address
// nginx appended, whatever the client wrote before it.
func clientOf(h http.Header) string {
	xff := strings.Join(h.Values("X-Forwarded-For"), ", ")
	return strings.TrimSpace(xff[strings.LastIndex(xff, ",")+1:])
}

// authInputs is everything a forward-auth answer depends on, as waitroom
// reads it: the host, the path as sent, the client nginx saw, the room's
// pass cookie and the Authorization header. The fake verify derives its
// answer from it; the order site derives it again from what reached it.
func authInputs(h http.Header, host, target string) string {
	path, _, _ := strings.Cut(target, "?")
	sum := sha256.Sum256([]byte(strings.Join([]string{host, path, clientOf(h), roomPass(h), h.Get("Authorization")}, "\n")))
	return hex.EncodeToString(sum[:8])
}

// authRig is the fake waitroom's and order site's record, per X-Test-Seq.
type authRig struct {
	addr     string // nginx's
	mu       sync.Mutex
	calls    int               // verify calls
	answered map[string]int    // X-Test-Seq -> verify's status
	reached  map[string]string // X-Test-Seq -> problem at the order site, "" fine
}

func newAuthRig(t *testing.T) *authRig {
	t.Helper()
	bin := nginxPath(t)
	rig := &authRig{answered: map[string]int{}, reached: map[string]string{}}
	waitroom := httptest.NewServer(http.HandlerFunc(rig.verify))
	t.Cleanup(waitroom.Close)
	order := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := authInputs(r.Header, r.Host, r.RequestURI)
		problem := ""
		if sub := r.Header.Get(gate.HeaderSub); sub != "" && !strings.HasPrefix(sub, in+":") {
			problem = fmt.Sprintf("identity %q for inputs %s (client %s, pass %q)", sub, in, clientOf(r.Header), roomPass(r.Header))
		}
		rig.mu.Lock()
		rig.reached[r.Header.Get("X-Test-Seq")] = problem
		rig.mu.Unlock()
	}))
	t.Cleanup(order.Close)
	rig.addr = strings.TrimPrefix(startNginx(t, bin, strings.TrimPrefix(waitroom.URL, "http://"), strings.TrimPrefix(order.URL, "http://")), "http://")
	return rig
}

// verify answers as /gate/verify would in kind: a bypassed path without a
// pass 204 naming no one, no pass 401, else by the inputs 401, 503 or 204
// naming them (and the call, so two answers never look alike).
func (rig *authRig) verify(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/gate/verify" {
		w.WriteHeader(http.StatusUnauthorized) // /gate/refused
		return
	}
	target := r.Header.Get(gate.HeaderOriginalURI)
	in := authInputs(r.Header, r.Host, target)
	hasPass := roomPass(r.Header) != "" || r.Header.Get("Authorization") != ""
	status := http.StatusNoContent
	switch {
	case !hasPass && strings.HasPrefix(target, "/static/"): // 204, no one
	case !hasPass, in[0] < '4':
		status = http.StatusUnauthorized
	case in[0] < '6':
		status = http.StatusServiceUnavailable
	}
	rig.mu.Lock()
	rig.calls++
	n := rig.calls
	rig.answered[r.Header.Get("X-Test-Seq")] = status
	rig.mu.Unlock()
	if status == http.StatusNoContent && hasPass {
		w.Header().Set(gate.HeaderSub, fmt.Sprintf("%s:%d", in, n))
		w.Header().Set(gate.HeaderQueue, "q")
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
}

// outcome is what became of request seq: verify's answer (0: not asked,
// answered from nginx's cache), whether it reached the order site, and
// the problem the order site saw.
func (rig *authRig) outcome(seq string) (status int, reached bool, problem string) {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	problem, reached = rig.reached[seq]
	return rig.answered[seq], reached, problem
}

// getFrom sends one GET for target on host to nginx from the loopback
// address src (so nginx sees a client of the test's choosing), with
// header's name, value pairs written as they are: a raw request, so
// values may hold any separator a client can send.
func getFrom(src, addr, host, target string, header ...string) (int, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\nConnection: close\r\n", target, host)
	for i := 0; i+1 < len(header); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", header[i], header[i+1])
	}
	b.WriteString("\r\n")
	if _, err := c.Write([]byte(b.String())); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, nil // closed without an answer: nothing reached anyone
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// A pass shaped as every pass is (three base64url parts), so nginx may
// keep its answers.
const (
	tokenA = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhIn0.c2lnLWE"
	tokenB = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJiIn0.c2lnLWI"
)

// collidingPair is a holder's request from holder and a friend's from
// friend whose keys under the old cache key
// ("$host|$request_uri|$proxy_add_x_forwarded_for|$scheme|$http_cookie")
// are one string: nginx appends ", <client>" to X-Forwarded-For, and the
// holder writes into the Cookie header what the friend's key has after
// its own address, so both read "a, holder|http|b, friend|http|c". c
// carries the pass; a and b are anything.
func collidingPair(holder, friend, a, b, c string) (h, f []string) {
	h = []string{"X-Forwarded-For", a, "Cookie", b + ", " + friend + "|http|" + c}
	f = []string{"X-Forwarded-For", a + ", " + holder + "|http|" + b, "Cookie", c}
	return h, f
}

// The colliding pair: under the old key the friend, at
// another address, got the holder's cached 204 and identity, and verify
// never saw the friend's address. Now each is answered for itself, and
// the holder's repeat is still answered from the cache.
func TestNginxAuthCacheCollidingPair(t *testing.T) {
	t.Parallel()
	rig := newAuthRig(t)
	// A pair whose inputs verify admits (204 naming the holder).
	for i := range 50 {
		a, b := fmt.Sprintf("10.9.%d.1", i), "x=1"
		h, f := collidingPair("127.0.0.2", "127.0.0.3", a, b, "y; wr_pass_q="+tokenA)
		seq := func(s string) []string { return []string{"X-Test-Seq", fmt.Sprint(i) + s} }
		if _, err := getFrom("127.0.0.2", rig.addr, "shop.example", "/order", append(h, seq("h")...)...); err != nil {
			t.Fatal(err)
		}
		if st, _, _ := rig.outcome(fmt.Sprint(i) + "h"); st != http.StatusNoContent {
			continue // verify refused these inputs: try other ones
		}
		if _, err := getFrom("127.0.0.3", rig.addr, "shop.example", "/order", append(f, seq("f")...)...); err != nil {
			t.Fatal(err)
		}
		if _, err := getFrom("127.0.0.2", rig.addr, "shop.example", "/order", append(h, seq("r")...)...); err != nil {
			t.Fatal(err)
		}
		st, reached, problem := rig.outcome(fmt.Sprint(i) + "f")
		if problem != "" || st == 0 {
			t.Fatalf("the friend at 127.0.0.3 was answered from the holder's cache entry (reached the site: %v): %s", reached, problem)
		}
		if st, reached, _ := rig.outcome(fmt.Sprint(i) + "r"); st != 0 || !reached {
			t.Fatalf("the holder's repeat asked verify (%d) or did not reach the site: the cache keeps nothing", st)
		}
		return
	}
	t.Fatal("verify admitted none of 50 inputs: the test proves nothing")
}

// A property of the cache key, through a real nginx and the shipped
// config: over generated requests from four client addresses, whose
// Cookie, X-Forwarded-For, Host, request target and Authorization hold
// '|', ',', ';', spaces, '=', other clients' addresses and pass cookies
// (one, two, another room's, quoted, malformed), a third of them pairs
// built to collide under the old key, every request that reaches the
// order site carries the identity verify gave for exactly its own inputs
// (host, path, the client nginx saw, its room's pass), and a request
// without exactly one pass cookie, or whose answer was a 401 or 503,
// always reached verify itself.
func TestNginxAuthCacheKeyProperty(t *testing.T) {
	t.Parallel()
	rig := newAuthRig(t)
	clients := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}
	pieces := append([]string{"|", ",", ", ", ";", "; ", " ", "=", "|http|", "http", "x=1", "theme=dark", "wr_pass_q=" + tokenA,
		"wr_pass_q=" + tokenB, "wr_pass_r=" + tokenA, "__Host-wr_pass_q=" + tokenA, "WR_PASS_Q=" + tokenB, `wr_pass_q="` + tokenA + `"`,
		"wr_pass_q=PASS-A", "10.0.0.1", "shop.example", "/order"}, clients...)
	junk := func(rng *rand.Rand) string {
		var b strings.Builder
		for range rng.IntN(5) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	passCookies := []string{"wr_pass_q=" + tokenA, "wr_pass_q=" + tokenB, "y; wr_pass_q=" + tokenA, "wr_pass_q=" + tokenA + "; theme=dark"}
	hosts := []string{"shop.example", "Shop.Example", "other.example", "shop.example|x", rig.addr}
	targets := []string{"/order", "/order/", "/order|x", "/order?a=|b", "/o%7Crder", "/order?x=1|127.0.0.2|http|", "/static/app.css", "/x/../order", "/order;|"}
	rng := rand.New(rand.NewPCG(21, 26))
	const n = 900
	hits, refusedAsked, pairs := 0, 0, 0
	send := func(seq, src, host, target string, hdr []string) {
		t.Helper()
		if _, err := getFrom(src, rig.addr, host, target, append(hdr, "X-Test-Seq", seq)...); err != nil {
			t.Fatal(err)
		}
		status, reached, problem := rig.outcome(seq)
		h := http.Header{}
		for i := 0; i+1 < len(hdr); i += 2 {
			h.Add(hdr[i], hdr[i+1])
		}
		switch {
		case problem != "":
			t.Fatalf("request %s from %s (%s %s, %q): %s", seq, src, host, target, hdr, problem)
		case status == 0 && !reached:
			// Refused before verify ran: a Host that Go's server, like
			// waitroom's, answers 400 ("shop.example|x").
		case status == 0 && (roomPass(h) == "" || h.Get("Authorization") != ""):
			t.Fatalf("request %s from %s (%s %s, %q) without one pass cookie was answered from the cache", seq, src, host, target, hdr)
		case status == 0:
			hits++
		case status != http.StatusNoContent && reached:
			t.Fatalf("request %s: verify answered %d and it reached the order site", seq, status)
		case status != http.StatusNoContent:
			refusedAsked++
		}
	}
	for i := 0; i < n; i++ {
		host, target := hosts[rng.IntN(len(hosts))], targets[rng.IntN(len(targets))]
		if i%3 == 0 { // a pair built to collide under the old key
			p := rng.Perm(len(clients))
			holder, friend := clients[p[0]], clients[p[1]]
			h, f := collidingPair(holder, friend, "1"+junk(rng), junk(rng), passCookies[rng.IntN(len(passCookies))])
			send(fmt.Sprint(i), holder, host, target, h)
			i++
			send(fmt.Sprint(i), friend, host, target, f)
			pairs++
			continue
		}
		var hdr []string
		if rng.IntN(2) == 0 {
			hdr = append(hdr, "X-Forwarded-For", junk(rng))
		}
		for range rng.IntN(3) {
			hdr = append(hdr, "Cookie", junk(rng))
		}
		if rng.IntN(4) == 0 {
			hdr = append(hdr, "Cookie", passCookies[rng.IntN(len(passCookies))])
		}
		if rng.IntN(8) == 0 {
			hdr = append(hdr, "Authorization", "Bearer "+tokenA)
		}
		send(fmt.Sprint(i), clients[rng.IntN(len(clients))], host, target, hdr)
	}
	t.Logf("%d requests (%d colliding pairs), %d answered from nginx's cache, %d refusals asked", n, pairs, hits, refusedAsked)
	if hits == 0 || refusedAsked == 0 {
		t.Fatalf("the run proves nothing: %d cache hits, %d refusals", hits, refusedAsked)
	}
	// A refusal is never kept: the same refused inputs ask verify again.
	rig.mu.Lock()
	before := rig.calls
	rig.mu.Unlock()
	for range 3 {
		if st, err := getFrom("127.0.0.2", rig.addr, "shop.example", "/order", "Cookie", "theme=dark"); err != nil || st == http.StatusOK {
			t.Fatalf("without a pass: %d %v", st, err)
		}
	}
	rig.mu.Lock()
	defer rig.mu.Unlock()
	if rig.calls != before+3 {
		t.Fatalf("three refused requests asked verify %d times", rig.calls-before)
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
	if _, err := queue.NewInspector(s.store).Remove(context.Background(), s.queue, u.id); err != nil {
		t.Fatal(err)
	}
	// Not wait.For: its step grows to 100 ms, and the holder's request
	// every 20 ms is what keeps the cache warm, here as before the removal.
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
