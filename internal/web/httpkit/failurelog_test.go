package httpkit

import (
	"context"
	"errors"
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

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/hygiene/loglimit"
)

// captured keeps the records a logger wrote.
type captured struct {
	mu      sync.Mutex
	records []slog.Record
}

func (c *captured) Enabled(context.Context, slog.Level) bool { return true }
func (c *captured) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	c.records = append(c.records, r.Clone())
	c.mu.Unlock()
	return nil
}
func (c *captured) WithAttrs([]slog.Attr) slog.Handler { return c } // request_id: not looked at
func (c *captured) WithGroup(string) slog.Handler      { return c }

// failed are the "request failed" lines, as their (code, method, route)
// and count.
func (c *captured) failed() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int64{}
	for _, r := range c.records {
		if r.Message != "request failed" {
			continue
		}
		var code, method, route string
		var count int64 = -1
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "code":
				code = a.Value.String()
			case "method":
				method = a.Value.String()
			case "route":
				route = a.Value.String()
			case "count":
				count = a.Value.Int64()
			}
			return true
		})
		out[code+" "+method+" "+route] += count
		out["lines"]++
	}
	return out
}

// TestFailuresLoggedOncePerCause: while the store is away, 1,000 failing
// requests on two routes in one period write one ERROR line per (cause,
// method, route), each naming them; the next period's line counts the
// failures since.
func TestFailuresLoggedOncePerCause(t *testing.T) {
	t.Parallel()
	logs := &captured{}
	clock := struct {
		sync.Mutex
		t time.Time
	}{t: time.Date(2026, 12, 24, 9, 0, 0, 0, time.UTC)}
	now := func() time.Time { clock.Lock(); defer clock.Unlock(); return clock.t }
	kit := NewResponder(slog.New(logs), nil)
	kit.failures = loglimit.NewKeyed(failureLogEvery, maxFailureKeys, now)
	// The store is away: every call fails as a dial to it does.
	away := func(w http.ResponseWriter, r *http.Request) {
		kit.Fail(w, r, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")})
	}
	router := chi.NewRouter()
	router.Post("/api/v1/queues/{queue}/enter", away)
	router.Get("/api/v1/queues/{queue}/status", away)
	srv := httptest.NewServer(Routed(router))
	t.Cleanup(srv.Close)
	e := failEnv{t: t, url: srv.URL, queue: "q"}

	enter := "/api/v1/queues/" + e.queue + "/enter"
	status := "/api/v1/queues/" + e.queue + "/status?user_id=" + url.QueryEscape("u")
	fail := func(n int) {
		var wg sync.WaitGroup
		for g := range 10 {
			wg.Go(func() {
				for i := range n / 20 {
					r := e.do("POST", enter, `{"user_id":"u`+string(rune('a'+g))+`"}`)
					if i == 0 && r.status != 503 {
						t.Errorf("enter with the store away: %d %s", r.status, r.body)
					}
					e.do("GET", status, "")
				}
			})
		}
		wg.Wait()
	}
	fail(1000)
	keyEnter := "unavailable POST /api/v1/queues/{queue}/enter"
	keyStatus := "unavailable GET /api/v1/queues/{queue}/status"
	if got := logs.failed(); got["lines"] != 2 || got[keyEnter] != 1 || got[keyStatus] != 1 {
		t.Fatalf("1,000 failures in one period logged %v; want one line each for %q and %q, count 1", got, keyEnter, keyStatus)
	}

	clock.Lock()
	clock.t = clock.t.Add(failureLogEvery)
	clock.Unlock()
	fail(20)
	// The first line's 1, then 500: the 499 after it in the first period
	// and the first of this one (the 9 after that wait for the next line).
	if got := logs.failed(); got["lines"] != 4 || got[keyEnter] != 501 || got[keyStatus] != 501 {
		t.Fatalf("the next period logged %v; want two more lines, counting 500 each", got)
	}
}

// failEnv calls a test server's routes.
type failEnv struct {
	t          *testing.T
	url, queue string
}

type failResponse struct {
	status int
	body   []byte
}

func (e failEnv) do(method, path, body string) failResponse {
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Errorf("%s %s: %v", method, path, err)
		return failResponse{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return failResponse{resp.StatusCode, b}
}
