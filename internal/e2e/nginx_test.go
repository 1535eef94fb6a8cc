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
	"github.com/waitroom/waitroom/internal/demo"
	"github.com/waitroom/waitroom/internal/httpin/pathtest"
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
	shipped, err := os.ReadFile("../../deploy/nginx/waitroom.conf")
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
	eventually(t, 10*time.Second, "nginx to listen", func() (bool, string) {
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
	eventually(t, 5*time.Second, "the site to close after the leave", func() (bool, string) {
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
