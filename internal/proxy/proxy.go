// Package proxy is waitroom's reverse-proxy gate: with WAITROOM_UPSTREAM
// set, every request that is not one of waitroom's own goes to the order
// page behind it, through the gate package's pass check (NewGate), which
// also serves /gate/verify for proxies doing forward auth.
package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/loglimit"
	"github.com/waitroom/waitroom/internal/pass"
)

// Recheck is how often waitroom's gate asks Redis whether a pass it let in
// is still current: a revoked pass stops opening within it (plus one
// check), and an admitted user costs Redis one read per period however
// many requests they make.
const Recheck = 2 * time.Second

// NewGate returns waitroom's own gate for queue: passes checked with this
// service's keys, cached, and re-checked against the store every Recheck.
// Refused browsers go to the queue's waiting page on this site.
func NewGate(ctx context.Context, queue string, passes *pass.Passes, adm pass.Admissions, bypass []string, insecureCookie bool) (*gate.Gate, error) {
	cache, err := pass.NewCache(passes.Verifier, pass.Current(adm), Recheck, gate.MaxCachedPasses)
	if err != nil {
		return nil, err
	}
	return gate.New(ctx, gate.Options{
		Queue:          queue,
		Checker:        gate.CacheChecker(cache),
		WaitingPage:    "/q/" + queue,
		Bypass:         bypass,
		InsecureCookie: insecureCookie,
	})
}

// New returns a handler that sends requests to upstream. It expects to run
// behind a gate (gate.FromContext gives the claims whose sub and queue it
// forwards). timeout bounds the wait for the upstream's response headers;
// a body may then stream (server-sent events, WebSockets) for as long as
// both ends keep it open.
func New(upstream *url.URL, timeout time.Duration, log *slog.Logger) http.Handler {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	transport.ResponseHeaderTimeout = timeout
	transport.MaxIdleConnsPerHost = 256
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.SetXForwarded()
			// Any X-Waitroom-* a client sent goes, so the upstream can trust
			// the ones set from the pass.
			for k := range pr.Out.Header {
				if strings.HasPrefix(k, "X-Waitroom-") {
					delete(pr.Out.Header, k)
				}
			}
			if c, ok := gate.FromContext(pr.In.Context()); ok {
				pr.Out.Header.Set(gate.HeaderSub, c.Subject)
				pr.Out.Header.Set(gate.HeaderQueue, c.Queue)
			}
		},
		Transport: transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return // the client went away
			}
			log.WarnContext(r.Context(), "upstream failed", "err", err, "path", loglimit.String(r.URL.Path))
			badGateway(w, r)
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server's deadlines are for waitroom's own short exchanges; a
		// request that passed the gate may upload or stream for long (a
		// WebSocket, server-sent events). The upstream timeout bounds the
		// wait for its answer to start.
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
		rp.ServeHTTP(w, r)
	})
}

const badGatewayHTML = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Temporarily unavailable</title></head>` +
	`<body><h1>Temporarily unavailable</h1><p>The page behind the waiting room is not answering. Please try again in a moment.</p></body></html>`

// badGateway answers 502 in the form the client asked for.
func badGateway(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", "5")
	if strings.Contains(r.Header.Get("Accept"), "text/html") {
		h.Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte(badGatewayHTML))
		return
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusBadGateway)
	_, _ = w.Write([]byte(`{"error":{"code":"upstream_unavailable","message":"the page behind the waiting room is not answering; try again shortly"}}` + "\n"))
}
