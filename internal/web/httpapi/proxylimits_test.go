package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/testkit/clientaddr"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// readingUpstream reads each body to its end, then answers 200; inside
// counts the requests it is reading.
func readingUpstream(t *testing.T) (*url.URL, *atomic.Int64) {
	t.Helper()
	var inside atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inside.Add(1)
		defer inside.Add(-1)
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "order page, %d bytes", n)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u, &inside
}

// slowPost opens a connection, sends a POST declaring 1 MB with header,
// and one byte every second until stop closes; it returns the answer's
// status line ("" if the connection ended without one).
func slowPost(t *testing.T, srv *httptest.Server, path string, header []string, stop <-chan struct{}) string {
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Error(err)
		return ""
	}
	defer conn.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 1000000\r\n", path)
	for i := 0; i+1 < len(header); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", header[i], header[i+1])
	}
	b.WriteString("\r\na")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Error(err)
		return ""
	}
	go func() {
		tick := time.NewTicker(time.Second) // the attacker's pace
		defer tick.Stop()
		for {
			select {
			case <-stop:
				conn.Close()
				return
			case <-tick.C:
				if _, err := io.WriteString(conn, "a"); err != nil {
					return
				}
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line)
}

// TestSlowPostsOfOnePass: one pass holder opens 100
// slow POSTs at once, and a client without a pass 100 on a bypassed path:
// only the caps (per admission, per address) are held, the rest get 429
// at once; meanwhile other people enter, poll, and pass holders' requests
// (a page, a POST) are answered. Before, every one of them was held, and
// 6,300 of them froze the room.
func TestSlowPostsOfOnePass(t *testing.T) {
	t.Parallel()
	upURL, inside := readingUpstream(t)
	const perPass, perClient, tries = 8, 8, 100
	h, err := proxy.NewHandler(proxy.Options{Upstream: upURL, Timeout: 10 * time.Second, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Limits: proxy.Limits{BodyGrace: time.Minute, BodyMinRate: 1, PerPass: perPass, PerClient: perClient}})
	if err != nil {
		t.Fatal(err)
	}
	rdb := redistest.Client(t)
	places, passes := newTrust(t, rdb)
	name := fmt.Sprintf("sp%d", time.Now().UnixNano())
	store, err := queue.NewStore(rdb, []string{name}, queue.Settings{RefillSize: 50, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGate(t, rdb, store, name, passes, []string{"/static/"}, true)
	e := newEnvWithStore(t, rdb, store, name, Options{Places: places, Passes: passes, Gate: g, ClientIP: behindProxy(t), Upstream: h})

	clients := clientaddr.New(t)
	from := func(n int) []string { return []string{"X-Forwarded-For", clients.Addr(n)} }
	holder, _ := e.enterAnon(from(1)...)
	if holder.Pass == "" {
		t.Fatalf("not admitted: %+v", holder)
	}
	stop := make(chan struct{})
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}()
	answers := make(chan string, 2*tries)
	for range tries {
		go func() { answers <- slowPost(t, e.srv, "/order", append(passCookie(e, holder.Pass), from(1)...), stop) }()
		go func() { answers <- slowPost(t, e.srv, "/static/upload", from(2), stop) }()
	}
	for range 2*tries - perPass - perClient {
		if got := <-answers; got != "HTTP/1.1 429 Too Many Requests" {
			t.Fatalf("past the caps: %q, want 429", got)
		}
	}
	wait.For(t, 30*time.Second, "the caps' requests at the upstream", func() (bool, string) { return inside.Load() == perPass+perClient, "" })

	// The room goes on answering everybody else meanwhile.
	for i := range 5 {
		tk, r := e.enterAnon(from(10 + i)...)
		if r.status != 200 || tk.Status != queue.Entered {
			t.Fatalf("someone else's enter while the drips hold: %d %+v", r.status, tk)
		}
		if r := e.statusOf(append([]string{"Authorization", "Bearer " + tk.PlaceToken}, from(10+i)...)...); r.status != 200 {
			t.Fatalf("someone else's status: %d %s", r.status, r.body)
		}
		auth := append(passCookie(e, tk.Pass), from(10+i)...)
		if r := e.do("GET", "/order", "", auth...); r.status != 200 {
			t.Fatalf("another holder's page: %d %s", r.status, r.body)
		}
		if r := e.do("POST", "/order", `{"seat":"1A"}`, auth...); r.status != 200 {
			t.Fatalf("another holder's order: %d %s", r.status, r.body)
		}
		if r := e.do("GET", "/static/app.css", "", from(10+i)...); r.status != 200 {
			t.Fatalf("another client's bypassed asset: %d", r.status)
		}
	}
	if n := inside.Load(); n != perPass+perClient {
		t.Fatalf("%d requests held at the upstream, want the caps' %d", n, perPass+perClient)
	}
	close(stop)
	wait.For(t, 30*time.Second, "the held requests to end", func() (bool, string) { return inside.Load() == 0, "" })
}
