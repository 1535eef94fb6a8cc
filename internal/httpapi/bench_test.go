package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/redistest"
)

// BenchmarkHandlers runs requests through the router in process, without
// the network, one at a time against a real Redis. Its allocs/op are exact
// where the machine's noise blurs CPU time, so they show what a change to
// the request path costs or saves; scripts/bench.sh measures the whole
// server under load.
//
//	go test -run '^$' -bench Handlers -benchmem ./internal/httpapi/
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
			serve(b, httptest.NewRequest("POST", api+"/enter", strings.NewReader(`{"user_id":"user-`+strconv.Itoa(n)+`"}`)))
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
			e.h.ServeHTTP(w, httptest.NewRequest("POST", api+"/enter", strings.NewReader(`{}`)))
			var tk ticketResponse
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
}
