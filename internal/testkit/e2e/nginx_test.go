package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck/pathtest"
	"github.com/waitroom/waitroom/internal/testkit/demo"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// nginxPath finds nginx or skips the test (fails it on CI).
func nginxPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("NGINX_PATH"), "/usr/sbin/nginx"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	msg := "nginx not found; run scripts/install-tools.sh test (or set NGINX_PATH)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startNginx runs a real nginx with the shipped deploy/nginx/waitroom.conf,
// its two upstream addresses and listen address swapped for the test's,
// and returns its base URL.
func startNginx(t *testing.T, bin, waitroomAddr, orderAddr string) string {
	t.Helper()
	shipped, err := os.ReadFile("../../../deploy/nginx/waitroom.conf")
	if err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	dir := t.TempDir()
	conf := string(shipped)
	for old, repl := range map[string]string{
		"server waitroom:8080;":          "server " + waitroomAddr + ";",
		"server demo-order:8081;":        "server " + orderAddr + ";",
		"listen 80;":                     "listen " + addr + ";",
		"/var/cache/nginx/waitroom_auth": filepath.Join(dir, "waitroom_auth"),
		"/var/cache/nginx/waitroom_line": filepath.Join(dir, "waitroom_line"),
	} {
		if !strings.Contains(conf, old) {
			t.Fatalf("deploy/nginx/waitroom.conf no longer has %q", old)
		}
		conf = strings.ReplaceAll(conf, old, repl)
	}
	if err := os.WriteFile(filepath.Join(dir, "waitroom.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // workers need the temp dir below
	}
	main := fmt.Sprintf(`%s
worker_processes 1;
error_log %[2]s/error.log warn;
pid %[2]s/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    include %[2]s/waitroom.conf;
}
`, user, dir)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;")
	cmd.Stdout, cmd.Stderr = t.Output(), t.Output()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if log, _ := os.ReadFile(filepath.Join(dir, "error.log")); len(log) > 0 {
			t.Logf("nginx error.log:\n%s", log)
		}
	})
	base := "http://" + addr
	wait.For(t, 30*time.Second, "nginx to listen", func() (bool, string) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
	return base
}

// headerRecorder remembers the X-Waitroom-* headers that reached the order
// site.
type headerRecorder struct {
	mu   sync.Mutex
	seen []http.Header
}

func (h *headerRecorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, r.Header.Clone())
		h.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (h *headerRecorder) last() http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.seen) == 0 {
		return nil
	}
	return h.seen[len(h.seen)-1]
}

// A real nginx with the shipped config in front of the demo order page,
// asking waitroom's /gate/verify: no pass -> waiting page; admitted ->
// order page; revoked -> waiting page again.
func TestNginxForwardAuth(t *testing.T) {
	t.Parallel()
	bin := nginxPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1)})
	seen := &headerRecorder{}
	order := httptest.NewUnstartedServer(nil)
	order.Start()
	t.Cleanup(order.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h, err := demo.New(ctx, demo.Options{Queue: s.queue, Waitroom: s.url, Issuer: issuer,
		WaitingPage: "/q/" + s.queue, InsecureCookie: true})
	if err != nil {
		t.Fatal(err)
	}
	order.Config.Handler = seen.wrap(h)
	base := startNginx(t, bin, strings.TrimPrefix(s.url, "http://"), strings.TrimPrefix(order.URL, "http://"))

	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	do := func(method, path, body string, header ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	waiting := "/q/" + s.queue

	// No pass: browsers to the waiting page, with the path to come back to.
	resp, _ := do("GET", "/?event=7&seat=a", "", "Accept", "text/html")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != waiting+"?return=%2F%3Fevent%3D7%26seat%3Da" {
		t.Fatalf("no pass: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := do("POST", "/buy", "train=1", "Content-Type", "application/x-www-form-urlencoded")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `"pass_required"`) {
		t.Fatalf("POST without a pass: %d %s", resp.StatusCode, body)
	}
	if seen.last() != nil {
		t.Fatal("a request without a pass reached the order site")
	}
	if resp, body := do("GET", waiting+"?return=%2F", ""); resp.StatusCode != 200 || !strings.Contains(body, "waiting.js") {
		t.Fatalf("the waiting page through nginx: %d", resp.StatusCode)
	}

	// Admitted (the bucket's token), through nginx as a browser would.
	resp, body = do("POST", "/api/v1/queues/"+s.queue+"/enter", "{}", "Content-Type", "application/json")
	var tk struct {
		UserID string `json:"user_id"`
		Status string `json:"status"`
		Pass   string `json:"pass"`
	}
	if err := json.Unmarshal([]byte(body), &tk); err != nil || tk.Status != "ENTERED" || tk.Pass == "" {
		t.Fatalf("enter through nginx: %d %s", resp.StatusCode, body)
	}
	resp, _ = do("GET", "/?event=7&wr_pass="+url.QueryEscape(tk.Pass), "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/?event=7" {
		t.Fatalf("hand-over: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if seen.last() != nil {
		t.Fatal("the hand-over reached the order site")
	}
	resp, body = do("GET", "/?event=7", "", "X-Waitroom-Sub", "a:spoofed")
	if resp.StatusCode != 200 || !strings.Contains(body, `id="event"`) || !strings.Contains(body, tk.UserID) {
		t.Fatalf("admitted: %d %s", resp.StatusCode, body)
	}
	hdr := seen.last()
	if hdr.Get(gate.HeaderSub) != tk.UserID || hdr.Get(gate.HeaderQueue) != s.queue {
		t.Fatalf("the order site saw X-Waitroom-Sub %q, -Queue %q", hdr.Get(gate.HeaderSub), hdr.Get(gate.HeaderQueue))
	}
	// The site sees the client and its own host, as behind any proxy (a
	// location that sets headers of its own inherits none: the config
	// repeats them).
	if hdr.Get("X-Forwarded-For") != "127.0.0.1" || hdr.Get("X-Forwarded-Proto") != "http" || hdr.Get("X-Forwarded-Host") != "127.0.0.1" {
		t.Fatalf("the order site saw X-Forwarded-For %q, -Proto %q, -Host %q", hdr.Get("X-Forwarded-For"), hdr.Get("X-Forwarded-Proto"), hdr.Get("X-Forwarded-Host"))
	}
	if resp, body := do("POST", "/buy", "train=KTX+101", "Content-Type", "application/x-www-form-urlencoded"); resp.StatusCode != 200 || !strings.Contains(body, "Booked") {
		t.Fatalf("buy: %d %s", resp.StatusCode, body)
	}

	// A forged pass in the cookie is refused like none.
	forged, _ := cookiejar.New(nil)
	u, _ := url.Parse(base)
	forged.SetCookies(u, []*http.Cookie{{Name: gate.CookieName(s.queue, false), Value: tk.Pass[:len(tk.Pass)-20] + strings.Repeat("A", 20)}})
	fc := &http.Client{Jar: forged, CheckRedirect: client.CheckRedirect}
	if r, err := fc.Get(base + "/"); err != nil || r.StatusCode != http.StatusSeeOther {
		t.Fatalf("forged pass: %v %v", r, err)
	} else {
		r.Body.Close()
	}

	// The user leaves (waitroom's API, through nginx): within 5 s the site
	// is closed again.
	if resp, _ := do("DELETE", "/api/v1/queues/"+s.queue+"/place", ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("leave: %d", resp.StatusCode)
	}
	wait.For(t, 30*time.Second, "the site to close after the leave", func() (bool, string) {
		resp, _ := do("GET", "/", "", "Accept", "text/html")
		return resp.StatusCode == http.StatusSeeOther && strings.HasPrefix(resp.Header.Get("Location"), waiting), resp.Status
	})
}

// No generated path reaches the site behind the shipped nginx config
// without a pass unless every known server's resolution of what it
// received is under WAITROOM_GATE_BYPASS (/static/ here): /gate/verify
// bypasses only clean paths, and refuses a path nginx would forward
// other than it was checked.
func TestNginxPathsProperty(t *testing.T) {
	t.Parallel()
	bin := nginxPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1)})
	rec := &pathtest.Recorder{}
	site := httptest.NewServer(rec)
	t.Cleanup(site.Close)
	base := startNginx(t, bin, strings.TrimPrefix(s.url, "http://"), strings.TrimPrefix(site.URL, "http://"))
	addr := strings.TrimPrefix(base, "http://")

	resp, err := http.Post(s.url+"/api/v1/queues/"+s.queue+"/enter", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	var tk struct{ Pass string }
	err = json.NewDecoder(resp.Body).Decode(&tk)
	resp.Body.Close()
	if err != nil || tk.Pass == "" {
		t.Fatalf("not admitted: %v %+v", err, tk)
	}
	rng := rand.New(rand.NewPCG(13, 17))
	const n = 2000
	for i := range n {
		var hdr []string
		if i%5 == 0 {
			hdr = []string{"Cookie", gate.CookieName(s.queue, false) + "=" + tk.Pass}
		}
		if _, err := pathtest.Get(addr, pathtest.Generate(rng, 6), hdr...); err != nil {
			t.Fatal(err)
		}
	}
	passless := rec.Check(t)
	seen := rec.Seen()
	t.Logf("%d requests, %d reached the site, %d without a pass", n, len(seen), passless)
	if passless == 0 || len(seen) == passless {
		t.Fatalf("the run proves nothing: %d passless, %d with a pass", passless, len(seen)-passless)
	}
	for _, p := range []string{"/static/%2e%2e/order", "/static/..%2forder", "/static/..;/order", "/static/%252e%252e/order", "/static/../order"} {
		if st, _ := pathtest.Get(addr, p); st == http.StatusOK {
			t.Errorf("%s: 200 without a pass", p)
		}
	}
}

// Two rooms behind the shipped nginx config (WAITROOM_GATE_ROUTES=/b/=B,
// WAITROOM_GATE_QUEUE=A): a pass for room A is refused on room B's path,
// sent to B's waiting page, and handed over there sets no cookie; B's pass
// opens B's paths and not A's. WAITROOM_GATE_BYPASS_CIDRS names a client
// (127.0.0.2) that passes without a pass, judged on the address nginx
// appends to X-Forwarded-For (nginx, 127.0.0.1, is the one trusted
// proxy): a client at 127.0.0.3 writing 127.0.0.2 there does not pass.
func TestNginxTwoRooms(t *testing.T) {
	t.Parallel()
	bin := nginxPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1), twoRooms: true, trusted: []string{"127.0.0.1"}, bypassCIDRs: []string{"127.0.0.2"}})
	rec := &pathtest.Recorder{}
	site := httptest.NewServer(rec)
	t.Cleanup(site.Close)
	base := startNginx(t, bin, strings.TrimPrefix(s.url, "http://"), strings.TrimPrefix(site.URL, "http://"))

	passOf := func(q string) string {
		t.Helper()
		var tk struct{ Status, Pass string }
		wait.For(t, 30*time.Second, "admitted to "+q, func() (bool, string) {
			resp, err := http.Post(base+"/api/v1/queues/"+q+"/enter", "application/json", strings.NewReader("{}"))
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			_ = json.NewDecoder(resp.Body).Decode(&tk)
			return tk.Pass != "", tk.Status
		})
		return tk.Pass
	}
	a, b := passOf(s.queue), passOf(s.queueB)
	// from is a client at the loopback address ip.
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	do := func(c *http.Client, path string, header ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("GET", base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/html")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	cookie := func(q, pass string) []string { return []string{"Cookie", gate.CookieName(q, false) + "=" + pass} }
	client := from("127.0.0.1")
	reached := func() int { return len(rec.Seen()) }

	// A's pass on B's path: to B's waiting page, nothing reaches the site.
	for _, hdr := range [][]string{cookie(s.queue, a), cookie(s.queueB, a)} {
		resp := do(client, "/b/seat?x=1", hdr...)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/q/"+s.queueB+"?return=%2Fb%2Fseat%3Fx%3D1" {
			t.Errorf("A's pass (%s) on B's path: %d to %q", hdr[1], resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	if resp := do(client, "/b/seat", "Authorization", "Bearer "+a); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("A's pass as a bearer token on B's path: %d", resp.StatusCode)
	}
	// B's pass on A's paths: to A's waiting page.
	if resp := do(client, "/order", cookie(s.queueB, b)...); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/q/"+s.queue+"?return=%2Forder" {
		t.Errorf("B's pass on A's path: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Handed over on B's path, A's pass sets no cookie.
	if resp := do(client, "/b/?wr_pass="+url.QueryEscape(a)); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/q/"+s.queueB+"?") || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("A's hand-over on B's path: %d to %q, Set-Cookie %q", resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("Set-Cookie"))
	}
	// B's prefix written with a full-width or mathematical
	// "b", which a site folding Unicode reads as /b/, with A's pass:
	// 400 invalid_path from /gate/refused, nothing reaches the site.
	for _, path := range []string{"/%EF%BD%82/seat", "/%F0%9D%90%9B/seat"} {
		if resp := do(client, path, cookie(s.queue, a)...); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s (folds into B's /b/) with A's pass: %d, want 400", path, resp.StatusCode)
		}
	}
	if n := reached(); n != 0 {
		t.Fatalf("%d requests with the other room's pass reached the site", n)
	}
	// Each pass in its own room; B's handed over sets B's cookie.
	if resp := do(client, "/b/?wr_pass="+url.QueryEscape(b)); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/b/" || !strings.HasPrefix(resp.Header.Get("Set-Cookie"), gate.CookieName(s.queueB, false)+"=") {
		t.Errorf("B's hand-over on B's path: %d to %q, Set-Cookie %q", resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("Set-Cookie"))
	}
	for path, q := range map[string]string{"/b/seat": s.queueB, "/order": s.queue} {
		pass := map[string]string{s.queue: a, s.queueB: b}[q]
		if resp := do(client, path, cookie(q, pass)...); resp.StatusCode != http.StatusOK {
			t.Errorf("%s with its room's pass: %d", path, resp.StatusCode)
			continue
		}
		if seen := rec.Seen(); seen[len(seen)-1].Queue != q {
			t.Errorf("%s: the site saw X-Waitroom-Queue %q, want %q", path, seen[len(seen)-1].Queue, q)
		}
	}

	// The bypassed client, by the address nginx saw; not one who claims it.
	n := reached()
	for _, path := range []string{"/b/seat", "/order"} {
		if resp := do(from("127.0.0.2"), path); resp.StatusCode != http.StatusOK {
			t.Errorf("the bypassed client on %s: %d", path, resp.StatusCode)
		}
		if resp := do(from("127.0.0.3"), path, "X-Forwarded-For", "127.0.0.2"); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("a client claiming the bypassed address on %s: %d", path, resp.StatusCode)
		}
	}
	if got := reached() - n; got != 2 {
		t.Errorf("%d requests without a pass reached the site, want the bypassed client's 2", got)
	}
	// Straight to waitroom (no trusted proxy in between), the claim is not
	// read either.
	req, _ := http.NewRequest("GET", s.url+"/gate/verify", nil)
	req.Header.Set(gate.HeaderOriginalURI, "/b/seat")
	req.Header.Set("X-Forwarded-For", "127.0.0.2")
	if resp, err := from("127.0.0.3").Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/gate/verify asked directly with a claimed address: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// At waitroom's own doors, without nginx: in gate mode with
// two rooms (B at /b/, A everywhere else), B's prefix written with runes
// that fold into "b" is refused with 400 invalid_path by the reverse
// proxy and /gate/refused, and 401 invalid_path by /gate/verify, whatever
// pass comes with it; nothing reaches the site.
func TestGateUnicodeFoldsAtEveryDoor(t *testing.T) {
	t.Parallel()
	rec := &pathtest.Recorder{}
	site := httptest.NewServer(rec)
	t.Cleanup(site.Close)
	u, _ := url.Parse(site.URL)
	s := newStack(t, stackOptions{settings: fastTicks(1), twoRooms: true, upstream: u})
	a := enterUser(t, s)
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(path string, header ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", s.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	cookie := []string{"Cookie", gate.CookieName(s.queue, false) + "=" + a.pass}
	for _, path := range []string{"/%EF%BD%82/seat", "/%F0%9D%90%9B/seat", "/%E1%B5%87/seat"} { // ｂ, 𝐛, ᵇ
		for _, hdr := range [][]string{nil, cookie} {
			if st, body := do(path, hdr...); st != http.StatusBadRequest || !strings.Contains(body, "invalid_path") {
				t.Errorf("reverse proxy %s (%d header fields): %d %s", path, len(hdr), st, body)
			}
			orig := append([]string{gate.HeaderOriginalURI, path}, hdr...)
			if st, body := do("/gate/verify", orig...); st != http.StatusUnauthorized || !strings.Contains(body, "invalid_path") {
				t.Errorf("/gate/verify %s: %d %s", path, st, body)
			}
			if st, body := do("/gate/refused", orig...); st != http.StatusBadRequest || !strings.Contains(body, "invalid_path") {
				t.Errorf("/gate/refused %s: %d %s", path, st, body)
			}
		}
	}
	if st, _ := do("/order", cookie...); st != http.StatusOK {
		t.Fatalf("A's pass on A's path: %d", st)
	}
	if n := len(rec.Seen()); n != 1 {
		t.Fatalf("%d requests reached the site, want the one on A's path", n)
	}
}
