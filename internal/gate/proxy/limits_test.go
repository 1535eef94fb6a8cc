package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// bodyUpstream reads every body to its end and answers how many bytes it
// got; inside counts the requests it is reading.
type bodyUpstream struct {
	srv    *httptest.Server
	inside atomic.Int64
}

func newBodyUpstream(t *testing.T) *bodyUpstream {
	t.Helper()
	u := &bodyUpstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.inside.Add(1)
		defer u.inside.Add(-1)
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%d", n)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// lines counts the log lines written through it.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), substr)
}

// cuts counts Options.OnCut by reason.
type cuts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *cuts) add(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[reason]++
}

func (c *cuts) get(reason string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[reason]
}

// front is the proxy with l in front of up, on a real listener.
func front(t *testing.T, up *url.URL, l Limits, log io.Writer) (*httptest.Server, *cuts) {
	t.Helper()
	c := &cuts{n: map[string]int{}}
	h, err := NewHandler(Options{Upstream: up, Timeout: 10 * time.Second, Log: slog.New(slog.NewTextHandler(log, nil)), Limits: l, OnCut: c.add})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, c
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// drip opens a connection to addr, sends a request declaring a body of
// declared bytes (chunked: in chunks of one byte) and then one byte
// every gap until the connection fails or stop closes; it returns the
// status line of the answer, or "" if none came before the connection
// ended.
func drip(t *testing.T, addr string, declared int, chunked bool, gap time.Duration, stop <-chan struct{}) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer conn.Close()
	head := fmt.Sprintf("POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: %d\r\n\r\n", declared)
	if chunked {
		head = "POST /upload HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n"
	}
	if _, err := io.WriteString(conn, head); err != nil {
		t.Error(err)
		return ""
	}
	go func() {
		tick := time.NewTicker(gap) // the attacker's pace, not a wait for the server
		defer tick.Stop()
		for {
			b := "a"
			if chunked {
				b = "1\r\na\r\n"
			}
			if _, err := io.WriteString(conn, b); err != nil {
				return
			}
			select {
			case <-stop:
				conn.Close()
				return
			case <-tick.C:
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line)
}

// TestSlowDripCut: a body that declares 1 MB and sends
// a byte every 20 ms, or comes chunked a byte at a time, is cut with 408
// once it falls behind its grace and the least rate; a body that keeps up
// goes through whole. Before, the proxy cleared the read deadline and
// waited for as long as the client dripped.
func TestSlowDripCut(t *testing.T) {
	t.Parallel()
	up := newBodyUpstream(t)
	srv, c := front(t, mustURL(t, up.srv.URL), Limits{BodyGrace: 300 * time.Millisecond, BodyMinRate: 1024, PerPass: 4, PerClient: 4}, io.Discard)
	addr := strings.TrimPrefix(srv.URL, "http://")
	stop := make(chan struct{})
	defer close(stop)
	for _, chunked := range []bool{false, true} {
		if got := drip(t, addr, 1<<20, chunked, 20*time.Millisecond, stop); got != "HTTP/1.1 408 Request Timeout" {
			t.Fatalf("chunked %v: a slow drip got %q, want 408", chunked, got)
		}
	}
	if n := c.get(CutSlowBody); n != 2 {
		t.Fatalf("slow bodies counted %d, want 2", n)
	}
	body := bytes.Repeat([]byte("x"), 4<<20)
	res, err := http.Post(srv.URL+"/upload", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(got) != fmt.Sprint(len(body)) {
		t.Fatalf("a body that keeps up: %d %q", res.StatusCode, got)
	}
}

// TestPerClientCap: requests without a pass (bypassed
// paths, here all of them) from one address: only PerClient are in
// flight at once, the rest get 429 too_many_in_flight; once they end, the
// address has its budget back.
func TestPerClientCap(t *testing.T) {
	t.Parallel()
	up := newBodyUpstream(t)
	const cap, tries = 4, 40
	srv, c := front(t, mustURL(t, up.srv.URL), Limits{BodyGrace: time.Minute, BodyMinRate: 1, PerPass: cap, PerClient: cap}, io.Discard)
	addr := strings.TrimPrefix(srv.URL, "http://")
	stop := make(chan struct{})
	answers := make(chan string, tries)
	for range tries {
		go func() { answers <- drip(t, addr, 1<<20, false, time.Second, stop) }()
	}
	for range tries - cap {
		if got := <-answers; got != "HTTP/1.1 429 Too Many Requests" {
			t.Errorf("past the cap: %q, want 429", got)
		}
	}
	wait.For(t, 30*time.Second, "the cap's requests at the upstream", func() (bool, string) { return up.inside.Load() == cap, "" })
	if n := c.get(CutClientBusy); n != tries-cap {
		t.Fatalf("refused %d, want %d", n, tries-cap)
	}
	close(stop)
	for range cap {
		<-answers
	}
	wait.For(t, 30*time.Second, "the held requests to end", func() (bool, string) {
		n := up.inside.Load()
		return n == 0, fmt.Sprintf("%d at the upstream", n)
	})
	res, err := http.Post(srv.URL+"/upload", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("after the held requests ended: %d", res.StatusCode)
	}
}

// TestAbortedUploadsQuiet: 1,000 uploads the client
// breaks off write no "upstream failed" warning (3,131 aborts wrote 2,328
// before): a client abort is not the upstream's failure, it is counted
// (CutClientAbort) and logged at debug. An upstream that is really down
// is still logged, at most upstreamLogBurst lines a period.
func TestAbortedUploadsQuiet(t *testing.T) {
	t.Parallel()
	up := newBodyUpstream(t)
	log := &lines{}
	srv, c := front(t, mustURL(t, up.srv.URL), Limits{BodyGrace: time.Minute, BodyMinRate: 1, PerPass: 10_000, PerClient: 10_000}, log)
	addr := strings.TrimPrefix(srv.URL, "http://")
	const aborts = 1000
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Go(func() {
			for i := g; i < aborts; i += 20 {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.WriteString(conn, "POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 1000\r\n\r\npartial")
				conn.Close() // mid-body: 7 of the 1,000 bytes sent
			}
		})
	}
	wg.Wait()
	wait.For(t, 30*time.Second, "every abort counted", func() (bool, string) {
		n := c.get(CutClientAbort)
		return n == aborts, fmt.Sprintf("%d of %d counted", n, aborts)
	})
	if n := log.count("level="); n > 0 {
		t.Fatalf("%d log lines for %d aborted uploads, want none at info:\n%s", n, aborts, log.buf.String())
	}

	down, c2 := front(t, mustURL(t, "http://"+closedAddr(t)), DefaultLimits(), log)
	for range 200 {
		res, err := http.Get(down.URL + "/page")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadGateway {
			t.Fatalf("down upstream: %d", res.StatusCode)
		}
	}
	if n := log.count("upstream failed"); n < 1 || n > 2*upstreamLogBurst {
		t.Fatalf("%d upstream failed lines for 200 failures, want 1 to %d", n, 2*upstreamLogBurst)
	}
	if c2.get(CutClientAbort) != 0 {
		t.Fatal("an upstream failure counted as a client abort")
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestRefusedBodyNotWaitedFor: a request refused past the cap whose body
// is small enough for the server to read out and keep the connection
// (under 256 KiB) has its connection closed after the 429, not held open
// while the client drips the rest.
func TestRefusedBodyNotWaitedFor(t *testing.T) {
	t.Parallel()
	up := newBodyUpstream(t)
	srv, _ := front(t, mustURL(t, up.srv.URL), Limits{BodyGrace: time.Minute, BodyMinRate: 1, PerPass: 1, PerClient: 1}, io.Discard)
	addr := strings.TrimPrefix(srv.URL, "http://")
	stop := make(chan struct{})
	defer close(stop)
	held := make(chan string, 1)
	go func() { held <- drip(t, addr, 1<<20, false, time.Second, stop) }()
	wait.For(t, 30*time.Second, "the first request at the upstream", func() (bool, string) { return up.inside.Load() == 1, "" })
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 100\r\n\r\na"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(res.Body)
	if res.StatusCode != http.StatusTooManyRequests || !res.Close {
		t.Fatalf("status %d, close %v: want 429 and Connection: close", res.StatusCode, res.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after the 429: %v, want the server to close the connection (EOF)", err)
	}
}
