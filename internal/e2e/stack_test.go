package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/scheduler"
	"github.com/waitroom/waitroom/web"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

const adminToken = "e2e-admin-token"

// stack is one test's waitroom: a queue of its own on the shared Redis, a
// scheduler ticking it and the real HTTP server in front.
type stack struct {
	t     *testing.T
	queue string
	store *queue.Store
	url   string // base URL of the server, http://127.0.0.1:port
	calls *recorder
}

type stackOptions struct {
	settings  queue.Settings
	targetURL string        // where admitted users go; empty shows the turn panel
	redis     *redis.Client // nil: the package's shared Redis
}

func newStack(t *testing.T, o stackOptions) *stack {
	t.Helper()
	rdb := o.redis
	if rdb == nil {
		rdb = redistest.Client(t)
	}
	name := queueName(t)
	store, err := queue.NewStore(rdb, []string{name}, o.settings, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := store.Seed(ctx); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))

	sched, err := scheduler.Start(store, scheduler.Period(o.settings.RefillInterval), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sched.Stop(); err != nil {
			t.Errorf("scheduler stop: %v", err)
		}
	})

	static, err := fs.Sub(web.Static, "static")
	if err != nil {
		t.Fatal(err)
	}
	calls := &recorder{}
	api := httpapi.New(httpapi.Options{
		Store:      store,
		AdminToken: adminToken,
		TargetURL:  o.targetURL,
		Logger:     log,
		Static:     static,
	})
	srv := httptest.NewServer(calls.wrap(api))
	// Registered after the scheduler's cleanup, so it runs before it: no
	// request is in flight when the scheduler and Redis client go.
	t.Cleanup(srv.Close)
	return &stack{t: t, queue: name, store: store, url: srv.URL, calls: calls}
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// queueName is a fresh queue per test, so tests share Redis without
// flushing it and can run in parallel.
func queueName(t *testing.T) string {
	base := unsafeChars.ReplaceAllString(strings.TrimPrefix(t.Name(), "Test"), "-")
	if len(base) > 40 {
		base = base[:40]
	}
	return fmt.Sprintf("e2e-%s-%d", base, time.Now().UnixNano())
}

// fillWaiting enters users through the store until n of them wait in line,
// so the tokens of the current interval are used up first.
func (s *stack) fillWaiting(prefix string, n int) {
	s.t.Helper()
	ctx := context.Background()
	for i, waiting := 0, 0; waiting < n; i++ {
		if i > n+1000 {
			s.t.Fatalf("fillWaiting: still only %d waiting after %d enters", waiting, i)
		}
		tk, err := s.store.Enter(ctx, s.queue, fmt.Sprintf("%s-%d", prefix, i))
		if err != nil {
			s.t.Fatal(err)
		}
		if tk.Status == queue.Waiting {
			waiting++
		}
	}
}

// enterRequests counts the enter requests the pages made: a page that
// holds a place must never make a second one.
func (s *stack) enterRequests() int {
	return s.calls.count(func(c call) bool {
		return c.method == http.MethodPost && strings.HasSuffix(c.path, "/enter")
	})
}

func (s *stack) status(user string) queue.Ticket {
	s.t.Helper()
	tk, err := s.store.Status(context.Background(), s.queue, user)
	if err != nil {
		s.t.Fatal(err)
	}
	return tk
}

// call is one request the browser made to the server.
type call struct {
	method string
	path   string
	user   string // user_id query parameter, if any
	status int
}

// recorder keeps every request the server answered, so a test can check
// which API calls the pages made (and how they were answered).
type recorder struct {
	mu    sync.Mutex
	calls []call
}

func (r *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, req)
		r.mu.Lock()
		r.calls = append(r.calls, call{
			method: req.Method,
			path:   req.URL.Path,
			user:   req.URL.Query().Get("user_id"),
			status: sw.status,
		})
		r.mu.Unlock()
	})
}

// count returns how many recorded calls match.
func (r *recorder) count(match func(call) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if match(c) {
			n++
		}
	}
	return n
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// eventually polls cond until it holds or timeout passes; cond returns a
// description of what it saw for the failure message.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last saw: %s", timeout, what, saw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
