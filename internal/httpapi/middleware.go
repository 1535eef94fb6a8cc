package httpapi

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/waitroom/waitroom/internal/loglimit"
)

// logger returns base with the request id added, for messages about one
// request. It is built only when something is logged.
func logger(r *http.Request, base *slog.Logger) *slog.Logger {
	return base.With("request_id", middleware.GetReqID(r.Context()))
}

// logRequests writes an access log line per request: at info for server
// errors and the admin calls that succeed, at debug for the rest: the
// public API's successes, which a crowd polling its status makes by the
// thousand per second, and client errors (4xx), which a client makes as
// fast as it likes (a 1 MB path logged at info gave 208 MB of log in 4 s
// before, docs/RELIABILITY.md). The path is cut to loglimit.MaxString.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		start := time.Now()
		next.ServeHTTP(ww, r)
		level := slog.LevelDebug
		if st := ww.Status(); st >= 500 || st < 400 && strings.HasPrefix(r.URL.Path, "/admin") {
			level = slog.LevelInfo
		}
		if !s.log.Enabled(r.Context(), level) {
			return
		}
		s.log.LogAttrs(r.Context(), level, "request",
			slog.String("request_id", middleware.GetReqID(r.Context())),
			slog.String("method", r.Method),
			slog.String("path", loglimit.String(r.URL.Path)),
			slog.Int("status", ww.Status()),
			slog.Int("bytes", ww.BytesWritten()),
			slog.Duration("duration", time.Since(start)))
	})
}

// recoverPanics turns a panic into a logged JSON 500, so one bad request
// never takes the process down.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
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
			s.fail(w, r, errInternal)
		}()
		next.ServeHTTP(w, r)
	})
}

// contentSecurityPolicy allows only the service's own scripts, styles and
// API: no inline script, no third party.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// Header values set on every response. Header.Set allocates a new slice
// for each value on each request; these are built once and only ever read
// (net/http copies them when it sends the headers), which saves six
// allocations per response (BenchmarkHandlers). Code that changes one of
// these headers must replace the slice (Set does), never write into it.
var (
	cspHeader        = []string{contentSecurityPolicy}
	nosniffHeader    = []string{"nosniff"}
	noReferrerHeader = []string{"no-referrer"}
	denyHeader       = []string{"DENY"}
	jsonHeader       = []string{"application/json; charset=utf-8"}
	noStoreHeader    = []string{"no-store"}
)

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Security-Policy"] = cspHeader
		h["X-Content-Type-Options"] = nosniffHeader
		h["Referrer-Policy"] = noReferrerHeader
		h["X-Frame-Options"] = denyHeader
		next.ServeHTTP(w, r)
	})
}
