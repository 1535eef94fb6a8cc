package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/metrics"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/redistest"
)

// nullWriter is a response writer that keeps nothing but a fresh header
// map per request, as net/http's does.
type nullWriter struct{ h http.Header }

func (w *nullWriter) Header() http.Header         { return w.h }
func (w *nullWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nullWriter) WriteHeader(int)             {}

// BenchmarkHealthzChain is GET /healthz through the whole router in
// process (the middleware chain, metrics on, and the handler) against a
// bare handler that writes the same answer: what the chain costs a
// request, without the network and net/http's own work.
//
//	go test -run '^$' -bench HealthzChain -benchmem ./internal/httpapi/
func BenchmarkHealthzChain(b *testing.B) {
	rdb := redistest.Client(b)
	store, err := queue.NewStore(rdb, []string{"chain"}, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout)
	if err != nil {
		b.Fatal(err)
	}
	m := metrics.New(store)
	e := newEnvWithStore(b, rdb, store, "chain", Options{Metrics: m.Middleware})
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setJSONHeaders(w, http.StatusOK)
		_, _ = w.Write(healthyBody)
	})
	req := httptest.NewRequest("GET", "/healthz", nil)
	for _, h := range []struct {
		name string
		h    http.Handler
	}{{"bare", bare}, {"waitroom", e.h}} {
		b.Run(h.name, func(b *testing.B) {
			w := &nullWriter{}
			for b.Loop() {
				w.h = make(http.Header)
				h.h.ServeHTTP(w, req)
			}
		})
	}
}
