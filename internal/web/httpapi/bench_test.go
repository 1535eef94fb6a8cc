package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

// BenchmarkHandlers runs requests through the router in process, without
// the network, one at a time against a real Redis. Its allocs/op are exact
// where the machine's noise blurs CPU time, so they show what a change to
// the request path costs or saves; scripts/bench.sh measures the whole
// server under load.
//
//	go test -run '^$' -bench Handlers -benchmem ./internal/web/httpapi/
func BenchmarkHandlers(b *testing.B) {
	e := newEnv(b, redistest.Client(b), queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout, Options{InsecureUserIDs: true})
	api := "/api/v1/queues/" + e.queue
	serve := func(b *testing.B, req *http.Request) {
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("%s %s: %d %s", req.Method, req.URL, w.Code, w.Body)
		}
	}
	b.Run("healthz", func(b *testing.B) {
		for b.Loop() {
			serve(b, httptest.NewRequest("GET", "/healthz", nil))
		}
	})
	n := 0
	b.Run("enter", func(b *testing.B) {
		for b.Loop() {
			req := httptest.NewRequest("POST", api+"/enter", strings.NewReader(`{"user_id":"user-`+strconv.Itoa(n)+`"}`))
			req.Header.Set("Content-Type", "application/json")
			serve(b, req)
			n++
		}
	})
	b.Run("status", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			serve(b, httptest.NewRequest("GET", api+"/status?user_id=user-"+strconv.Itoa(i%max(n, 1)), nil))
		}
	})
	// The same with place credentials, as browsers and apps enter.
	var tokens []string
	b.Run("enter-place", func(b *testing.B) {
		for b.Loop() {
			w := httptest.NewRecorder()
			req := httptest.NewRequest("POST", api+"/enter", strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			e.h.ServeHTTP(w, req)
			var tk publicapi.TicketResponse
			if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &tk) != nil || tk.PlaceToken == "" {
				b.Fatalf("enter: %d %s", w.Code, w.Body)
			}
			if len(tokens) < 10000 {
				tokens = append(tokens, tk.PlaceToken)
			}
		}
	})
	b.Run("status-place", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			req := httptest.NewRequest("GET", api+"/status", nil)
			req.Header.Set("Authorization", "Bearer "+tokens[i%len(tokens)])
			serve(b, req)
		}
	})
	// The line's public document, what a far-back page reads instead of
	// its status (served from the snapshot's encoding: no Redis). The
	// snapshot is read again in the background, as the scheduler does.
	b.Run("line", func(b *testing.B) {
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		if err := e.store.RefreshSnapshot(ctx, e.queue, true); err != nil {
			b.Fatal(err)
		}
		go func() {
			t := time.NewTicker(500 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					_ = e.store.RefreshSnapshot(ctx, e.queue, false)
				}
			}
		}()
		for b.Loop() {
			serve(b, httptest.NewRequest("GET", api+"/line", nil))
		}
	})
}

// BenchmarkChallengeOneClient is one client asking for proof-of-work
// challenges as fast as it can, in process, under the default per-client
// enter limit (WAITROOM_LIMIT_ENTER_PER_CLIENT 5,300): served/s is what it
// gets over the run, refused/s what it is refused (429). A measurement,
// not an assertion: what the client gets depends on how long it asks.
//
//	go test -run '^$' -bench ChallengeOneClient -benchtime 10s ./internal/web/httpapi/
func BenchmarkChallengeOneClient(b *testing.B) {
	settings := queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour,
		Limits: queue.Limits{EnterPerClient: queue.Limit{Rate: 5, Burst: 300}}}
	e := newEnv(b, redistest.Client(b), settings, testTimeout, Options{})
	path := "/api/v1/queues/" + e.queue + "/challenge"
	var served, refused int
	start := time.Now()
	for b.Loop() {
		w := httptest.NewRecorder()
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr = "192.0.2.1:4000"
		e.h.ServeHTTP(w, req)
		switch w.Code {
		case http.StatusOK:
			served++
		case http.StatusTooManyRequests:
			refused++
		default:
			b.Fatalf("challenge: %d %s", w.Code, w.Body)
		}
	}
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64(served)/secs, "served/s")
	b.ReportMetric(float64(refused)/secs, "refused/s")
}

// BenchmarkWaitingPage renders the waiting page (GET /q/{queue}) through
// the router against a real Redis, one request at a time and from many
// goroutines: the page reads the queue's title and message, the only
// Redis call on its path.
//
//	go test -run '^$' -bench WaitingPage -benchmem ./internal/web/httpapi/
func BenchmarkWaitingPage(b *testing.B) {
	e := newEnv(b, redistest.Client(b), queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout, Options{})
	page := func(b *testing.B) {
		w := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/q/"+e.queue, nil)
		req.Header.Set("Accept", "text/html")
		req.Header.Set("Accept-Language", "ko-KR,ko;q=0.9")
		e.h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("GET /q/%s: %d %s", e.queue, w.Code, w.Body)
		}
	}
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			page(b)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(8) // 8 goroutines per CPU: requests waiting on Redis overlap
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				page(b)
			}
		})
	})
}
