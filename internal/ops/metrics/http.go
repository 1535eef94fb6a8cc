package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics count requests by route pattern, method and status code, and
// time them by route pattern and status class.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	children children[httpKey, httpChild]
}

type httpKey struct {
	route, method string
	code          int
}

type httpChild struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// unmatched is the route of a request no route of waitroom's own matched:
// a 404 or 405, or in gate mode a page of the upstream's.
const unmatched = "unmatched"

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	h := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests answered, by chi route pattern (unmatched: none of waitroom's own), method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "http", Name: "request_duration_seconds",
			Help:    "Time to answer an HTTP request, by chi route pattern and status class (2xx, 3xx, 4xx, 5xx).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "class"}),
	}
	reg.MustRegister(h.requests, h.duration)
	return h
}

// Middleware counts and times each request. It must run inside chi's
// router (r.Use), where it reads the matched route's pattern once the
// handler has run. A response writer an outer middleware made that records
// the status (httpapi's access log's, or chi's WrapResponseWriter) is
// reused, else it wraps one; and when that writer says when the request
// started (Started, as httpapi's does), the request is timed from then,
// which saves reading the clock twice for one request.
func (m *Metrics) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var start time.Time
		if s, ok := w.(startedWriter); ok {
			start = s.Started()
		} else {
			start = time.Now()
		}
		sw, ok := w.(statusWriter)
		if !ok {
			sw = middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		}
		next.ServeHTTP(sw, r)
		route := chi.RouteContext(r.Context()).RoutePattern() // "" without a chi context
		if route == "" {
			route = unmatched
		}
		code := sw.Status()
		if code == 0 { // nothing written: net/http answers 200
			code = http.StatusOK
		}
		m.http.child(route, r.Method, code).observe(time.Since(start))
	})
}

// statusWriter is a response writer that records the status it wrote (0:
// none yet).
type statusWriter interface {
	http.ResponseWriter
	Status() int
}

// startedWriter is a response writer that knows when its request started.
type startedWriter interface {
	Started() time.Time
}

func (c httpChild) observe(d time.Duration) {
	c.requests.Inc()
	c.duration.Observe(d.Seconds())
}

// child returns the series of one label set, made on its first use.
// Unusual methods and codes are folded so that a client cannot grow the
// label sets.
func (h *httpMetrics) child(route, method string, code int) httpChild {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		method = "other"
	}
	if code < 100 || code > 599 {
		code = 0
	}
	return h.children.get(httpKey{route, method, code}, h.newChild)
}

func (h *httpMetrics) newChild(k httpKey) httpChild {
	code, class := "other", "other"
	if k.code != 0 {
		code, class = strconv.Itoa(k.code), strconv.Itoa(k.code/100)+"xx"
	}
	return httpChild{
		requests: h.requests.WithLabelValues(k.route, k.method, code),
		duration: h.duration.WithLabelValues(k.route, class),
	}
}
