package httpapi

import (
	"context"
	"log/slog"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/hygiene/loglimit"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
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
	rdb := redis.NewClient(redistest.Client(t).Options())
	logs := &captured{}
	e := newEnv(t, rdb, slow, testTimeout, Options{InsecureUserIDs: true, Logger: slog.New(logs)})
	clock := struct {
		sync.Mutex
		t time.Time
	}{t: time.Date(2026, 12, 24, 9, 0, 0, 0, time.UTC)}
	now := func() time.Time { clock.Lock(); defer clock.Unlock(); return clock.t }
	e.server().failures = loglimit.NewKeyed(failureLogEvery, maxFailureKeys, now)
	_ = rdb.Close() // the store is away: every call fails

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
