package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/ops/metrics"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/web/httpkit"
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
//	go test -run '^$' -bench HealthzChain -benchmem ./internal/web/httpapi/
func BenchmarkHealthzChain(b *testing.B) {
	rdb := redistest.Client(b)
	store, err := queue.NewStore(rdb, []string{"chain"}, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout)
	if err != nil {
		b.Fatal(err)
	}
	m := metrics.New(store)
	e := newEnvWithStore(b, rdb, store, "chain", Options{Metrics: m.Middleware})
	req := httptest.NewRequest("GET", "/healthz", nil)
	healthz := httptest.NewRecorder()
	e.h.ServeHTTP(healthz, req) // the body the handler writes
	healthyBody := healthz.Body.Bytes()
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpkit.SetJSONHeaders(w, http.StatusOK)
		_, _ = w.Write(healthyBody)
	})
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

// BenchmarkGateChain is GET / with a valid pass cookie through waitroom's
// reverse-proxy gate (the gated chain: request id, log, metrics, recover,
// client address, the gate's path and pass checks, internal/gate/proxy's
// Rewrite) against a bare httputil.ReverseProxy (scripts/bare), both to
// the same upstream on loopback: what the gate adds to a proxied request.
// Time here includes the upstream's round trip; allocs/op and B/op are
// the steady part.
//
//	go test -run '^$' -bench GateChain -benchmem ./internal/web/httpapi/
func BenchmarkGateChain(b *testing.B) {
	page := []byte(`<!doctype html><title>Order</title><h1>Order page</h1>`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write(page)
	}))
	b.Cleanup(up.Close)
	upURL, _ := url.Parse(up.URL)
	rdb := redistest.Client(b)
	store, err := queue.NewStore(rdb, []string{"gchain"}, queue.Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout)
	if err != nil {
		b.Fatal(err)
	}
	m := metrics.New(store)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := newEnvWithStore(b, rdb, store, "gchain", Options{Metrics: m.Middleware, InsecureUserIDs: true, Upstream: upstreamProxy(upURL, 30*time.Second, log, nil)})
	tk := e.enter("bench-user")
	if tk.Pass == "" {
		b.Fatalf("not admitted: %+v", tk)
	}
	bareTransport := http.DefaultTransport.(*http.Transport).Clone()
	bareTransport.MaxIdleConnsPerHost = 256
	bare := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(upURL); pr.SetXForwarded() },
		Transport: bareTransport,
	}
	for _, h := range []struct {
		name string
		h    http.Handler
	}{{"bare", bare}, {"gate", e.h}} {
		b.Run(h.name, func(b *testing.B) {
			w := &nullWriter{}
			for b.Loop() {
				req := httptest.NewRequest("GET", "/", nil)
				req.RemoteAddr = "127.0.0.1:40000"
				req.Header.Set("Cookie", gate.CookieName("gchain", false)+"="+tk.Pass)
				req.Header.Set("Accept", "text/html")
				w.h = make(http.Header)
				h.h.ServeHTTP(w, req)
			}
		})
	}
}
