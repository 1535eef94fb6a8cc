package httpkit

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/hygiene/loglimit"
)

// maxRequestID is the longest X-Request-Id taken from a client.
const maxRequestID = 64

// requestIDPrefix starts the ids this process makes: 10 random base32
// characters, so that ids from different replicas and restarts differ.
var requestIDPrefix = rand.Text()[:10]

// requestIDs counts the ids this process has made.
var requestIDs atomic.Uint64

// RequestID puts the request's id in its context under chi's key, where
// middleware.GetReqID and so every log line and audit entry read it. A
// client's X-Request-Id is taken only if it is 1 to 64 characters of
// [A-Za-z0-9._-], else the request gets a fresh id: chi's RequestID took
// any value, of any length, with spaces, quotes or line breaks, into the
// logs and the audit log. As before, the id is not echoed in the
// response. It runs on every request, so it allocates only the context
// and the request copy: a fresh id is a number until something asks for
// it (idContext), and most requests log nothing. In front of the router,
// Routed does the same and more.
func RequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(newIDContext(r)))
	})
}

// routeContexts are chi routing contexts for Routed, reused as chi's own
// router reuses its.
var routeContexts = sync.Pool{New: func() any { return chi.NewRouteContext() }}

// Routed is RequestID in front of router, with chi's routing context made
// here and put in the same context as the id: chi takes a routing context
// it finds in the request (a parent router's) instead of copying the
// request to add its own. So a request to waitroom's routes gets one
// context and one copy of the request, not two of each (a request copy
// is some 250 bytes).
func Routed(router *chi.Mux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rctx := routeContexts.Get().(*chi.Context)
		rctx.Reset()
		rctx.Routes = router
		c := newIDContext(r)
		c.route = rctx
		router.ServeHTTP(w, r.WithContext(c))
		routeContexts.Put(rctx)
	})
}

// idContext holds a request's id: the client's, or the number of one of
// this process's own, spelled out (newRequestID) each time it is asked
// for, so that asking needs no lock and gives the same id every time.
// Before the router (Routed) it holds chi's routing context too.
type idContext struct {
	context.Context
	client  string       // the client's X-Request-Id when valid
	n       uint64       // else this process's count for the request
	route   *chi.Context // nil: none here
	addr    netip.Addr   // the client's address, once WithClient set it
	hasAddr bool
}

func newIDContext(r *http.Request) *idContext {
	c := &idContext{Context: r.Context()}
	if id := r.Header.Get(middleware.RequestIDHeader); validRequestID(id) {
		c.client = id
	} else {
		c.n = requestIDs.Add(1)
	}
	return c
}

func (c *idContext) Value(key any) any {
	switch {
	case key == middleware.RequestIDKey:
		if c.client != "" {
			return c.client
		}
		return newRequestID(c.n)
	case key == chi.RouteCtxKey && c.route != nil:
		return c.route
	case key == clientip.ContextKey && c.hasAddr:
		return c.addr
	}
	return c.Context.Value(key)
}

// validRequestID reports whether a client's id is 1 to maxRequestID
// bytes of [A-Za-z0-9._-].
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// newRequestID is the prefix and count n, "K3J9XQ2MZ7-42": at most 31
// characters, built in one allocation.
func newRequestID(n uint64) string {
	var b [32]byte
	k := copy(b[:], requestIDPrefix)
	b[k] = '-'
	return string(strconv.AppendUint(b[:k+1], n, 10))
}

// logger returns base with the request id added, for messages about one
// request. It is built only when something is logged.
func logger(r *http.Request, base *slog.Logger) *slog.Logger {
	return base.With("request_id", middleware.GetReqID(r.Context()))
}

// LogRequests writes an access log line per request: at info for server
// errors and the admin calls that succeed, at debug for the rest: the
// public API's successes, which a crowd polling its status makes by the
// thousand per second, and client errors (4xx), which a client makes as
// fast as it likes (a 1 MB path logged at info gave 208 MB of log in 4 s
// before, docs/RELIABILITY.md). The path is cut to loglimit.MaxString.
// Its response writer (writer.go) is the one the metrics reuse.
func (s *Responder) LogRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := newRecorder(w)
		next.ServeHTTP(rw, r)
		status, bytes, start := rw.status, rw.bytes, rw.start
		rw.release()
		level := slog.LevelDebug
		if status >= 500 || status < 400 && strings.HasPrefix(r.URL.Path, "/admin") {
			level = slog.LevelInfo
		}
		if !s.log.Enabled(r.Context(), level) {
			return
		}
		s.log.LogAttrs(r.Context(), level, "request",
			slog.String("request_id", middleware.GetReqID(r.Context())),
			slog.String("method", r.Method),
			slog.String("path", loglimit.String(r.URL.Path)),
			slog.Int("status", status),
			slog.Int("bytes", bytes),
			slog.Duration("duration", time.Since(start)))
	})
}

// RecoverPanics turns a panic into a logged JSON 500, so one bad request
// never takes the process down.
func (s *Responder) RecoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			logger(r, s.log).Error("panic", "value", v, "stack", string(debug.Stack()))
			s.Fail(w, r, ErrInternal)
		}()
		next.ServeHTTP(w, r)
	})
}

// RescueHash allows the pages' one inline script, their rescue
// (web/web.go), by its hash: TestRescueIsAllowed (package web) checks it.
const RescueHash = "'sha256-s3t7JLOXA4fq7Fq52guTf5QsrLFVor+tauYe+ZVcW40='"

// ContentSecurityPolicy allows only the service's own scripts, styles and
// API, no third party, and the pages' rescue.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self' " + RescueHash + "; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// Header values set on every response. Header.Set allocates a new slice
// for each value on each request; these are built once and only ever read
// (net/http copies them when it sends the headers), which saves six
// allocations per response (BenchmarkHandlers). Code that changes one of
// these headers must replace the slice (Set does), never write into it.
var (
	cspHeader        = []string{ContentSecurityPolicy}
	nosniffHeader    = []string{"nosniff"}
	noReferrerHeader = []string{"no-referrer"}
	denyHeader       = []string{"DENY"}
	JSONHeader       = []string{"application/json; charset=utf-8"}
	NoStoreHeader    = []string{"no-store"}
)

// SecurityHeaders sets the headers every answer of waitroom's own
// carries: its Content-Security-Policy, no sniffing, no referrer, no
// framing.
func SecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Security-Policy"] = cspHeader
		h["X-Content-Type-Options"] = nosniffHeader
		h["Referrer-Policy"] = noReferrerHeader
		h["X-Frame-Options"] = denyHeader
		next.ServeHTTP(w, r)
	})
}

// WithClient puts the client's address, as ips finds it (behind trusted
// proxies, the one they name), in the request context, where the gate's
// pass check counts the addresses a pass is used from.
// The request's own context from RequestID or Routed takes the address
// in place, so a gated request is copied once for its id and address,
// not twice: nothing else holds that context yet.
func WithClient(ips *clientip.Resolver) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a := ips.Addr(r)
			if c, ok := r.Context().(*idContext); ok {
				c.addr, c.hasAddr = a, true
				next.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r.WithContext(clientip.NewContext(r.Context(), a)))
		})
	}
}
