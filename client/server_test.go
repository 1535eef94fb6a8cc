package client_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/client"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/engine/scheduler"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/trust/humancheck/humanchecktest"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/httpapi"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

const adminToken = "client-test-admin-token-0123456789abcdef"

// server is a real waitroom: the service's router over a real Redis, with
// one fresh queue, counting the queue API calls it answers.
type server struct {
	t      *testing.T
	url    string
	queue  string
	store  *queue.Store
	calls  *counter
	human  *humanchecktest.Server // nil: no human check configured
	passes *pass.Passes
}

// serverOptions are what a test's server differs in.
type serverOptions struct {
	settings queue.Settings
	rdb      *redis.Client // nil: redistest's
	timeout  time.Duration // a store call's; 0: 2 s
	ticks    bool          // run the scheduler
	human    bool          // a human check's stand-in provider
}

// hourly is a queue that admits one person an hour: whoever is not
// admitted at once waits for the whole test.
var hourly = queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}

func newServer(t *testing.T, o serverOptions) *server {
	t.Helper()
	rdb := o.rdb
	if rdb == nil {
		rdb = redistest.Client(t)
	}
	if o.timeout == 0 {
		o.timeout = 2 * time.Second
	}
	name := fmt.Sprintf("client%d", time.Now().UnixNano())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var human *humancheck.Checker
	var hs *humanchecktest.Server
	if o.human {
		hs = humanchecktest.NewServer(t)
		var err error
		if human, err = humancheck.New(hs.Options(humancheck.Turnstile, humanchecktest.DefaultHostname), rdb, nil); err != nil {
			t.Fatal(err)
		}
	}
	moves := handoff.NewTracker(rdb, []string{name})
	storeOpts := []queue.Option{queue.WithRecentMoves(moves)}
	if human != nil {
		storeOpts = append(storeOpts, queue.WithHumanCheck(human.Available))
	}
	store, err := queue.NewStore(rdb, []string{name}, o.settings, o.timeout, storeOpts...)
	if err != nil {
		t.Fatal(err)
	}
	places, err := place.New([]byte(rand.Text() + rand.Text()))
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := pass.GenerateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pass.ParseKeys(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	passes, err := pass.New(keys, "https://waitroom.client.test")
	if err != nil {
		t.Fatal(err)
	}
	g, err := proxy.NewGate(context.Background(), proxy.GateOptions{Queue: name, Passes: passes, Admissions: store, InsecureCookie: true})
	if err != nil {
		t.Fatal(err)
	}
	handoffs := handoff.New(rdb, store, moves, o.timeout)
	if err := handoffs.SetPublicURL("http://waitroom.test"); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, queue: name, store: store, calls: &counter{n: map[string]int{}}, passes: passes}
	opts := httpapi.Options{
		Store: store, Redis: rdb, Places: places, Passes: passes, Gate: g, Handoffs: handoffs,
		AdminToken: adminToken, Logger: log,
		Static: fstest.MapFS{
			"waiting.html": {Data: []byte("<!doctype html><title>waiting</title>")},
			"admin.html":   {Data: []byte("<!doctype html><title>admin</title>")},
			"style.css":    {Data: []byte("body{}")},
			"favicon.ico":  {Data: []byte(strings.Repeat("icon", 64))},
		},
	}
	if human != nil {
		s.human, opts.Human = hs, human
	}
	srv := httptest.NewServer(s.calls.wrap(httpapi.New(opts)))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	if o.ticks {
		sch, err := scheduler.Start(store, scheduler.Period(o.settings.RefillInterval), log, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sch.Stop() })
	} else if _, err := store.Tick(context.Background(), name); err != nil {
		// The first tick, which the scheduler applies at start.
		t.Fatal(err)
	}
	return s
}

// client is a Client of s's queue with o's other options.
func (s *server) client(o client.Options) *client.Client {
	s.t.Helper()
	o.BaseURL, o.Queue = s.url, cmpStr(o.Queue, s.queue)
	c, err := client.New(o)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

func cmpStr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// admin sends an admin API call and fails the test unless it answers 2xx.
func (s *server) admin(method, path, body string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+"/admin/v1/queues/"+s.queue+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		s.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
}

// verify is the order page's check of a pass: its HTTP status.
func (s *server) verify(p string) int {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+"/api/v1/verify?queue="+s.queue, nil)
	req.Header.Set("Authorization", "Bearer "+p)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// fill takes the places of n other people (the first one takes the
// interval's admission, and whoever comes later waits).
func (s *server) fill(n int) {
	s.t.Helper()
	for range n {
		if _, err := s.client(client.Options{}).Enter(context.Background(), client.EnterOptions{}); err != nil {
			s.t.Fatal(err)
		}
	}
}

// counter counts the queue API calls a server answered, by method and
// last path segment ("GET status"), and their answers' statuses.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if !strings.HasPrefix(r.URL.Path, "/api/v1/queues/") {
			return
		}
		op := r.Method + " " + r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		c.mu.Lock()
		c.n[op]++
		c.n[fmt.Sprintf("%s %d", op, rec.status)]++
		c.mu.Unlock()
	})
}

// get is how many calls op ("GET status", or "GET status 503") were
// answered.
func (c *counter) get(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[op]
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// redisProxy stands between a server and Redis, so that a test can take
// Redis away (every connection cut, new ones closed at once) and give
// it back.
type redisProxy struct {
	ln     net.Listener
	target string
	down   atomic.Bool
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

func newRedisProxy(t *testing.T, target string) *redisProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &redisProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go p.serve()
	return p
}

func (p *redisProxy) addr() string { return p.ln.Addr().String() }

func (p *redisProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.down.Load() {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close(); c.Close() }()
		go func() { _, _ = io.Copy(c, up); up.Close(); c.Close() }()
	}
}

// setDown takes Redis away (cutting every connection) or gives it back.
func (p *redisProxy) setDown(down bool) {
	p.down.Store(down)
	if down {
		p.cut()
	}
}

func (p *redisProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// testClock is a Client's time in a test: it moves only when the client
// sleeps, and each sleep waits until the test lets it go (when gated).
type testClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
	gate   chan time.Duration // nil: sleeps return at once
	resume chan struct{}
	// onSleep, when set, runs at each sleep, with its number (from 1).
	onSleep func(n int, d time.Duration)
}

func newTestClock(gated bool) *testClock {
	c := &testClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if gated {
		c.gate, c.resume = make(chan time.Duration), make(chan struct{})
	}
	return c
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	n := len(c.sleeps)
	on := c.onSleep
	c.mu.Unlock()
	if on != nil {
		on(n, d)
	}
	if c.gate != nil {
		select {
		case c.gate <- d:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case <-c.resume:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return ctx.Err()
}

// Sleeps are the waits the client asked for so far.
func (c *testClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}
