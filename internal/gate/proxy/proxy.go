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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/hygiene/loglimit"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
)

// Observe hears each upstream answer to a request a pass let through: its
// room's queue, the admission it came with (its sub: the voice the
// controller weighs), its status (0: none came, the proxy gave up) and
// how long the upstream took to start answering (the response headers)
// from the request body's last byte. internal/ops/autorate judges the order
// page's health by it. Requests the client broke off are not heard.
type Observe func(queue, voice string, status int, took time.Duration)

// Options are what NewHandler is made of.
type Options struct {
	Upstream *url.URL
	// Timeout bounds the wait for the upstream's response headers once
	// the request (its body too) is sent.
	Timeout time.Duration
	Log     *slog.Logger
	// Observe hears the upstream's answers (nil: nobody).
	Observe Observe
	// Limits bound the bodies and the requests in flight.
	Limits Limits
	// OnCut counts each request cut short or refused, by a Cut reason
	// (nil: not counted).
	OnCut func(reason string)
}

// upstreamLogBurst lines about failed upstream requests pass per
// upstreamLogPeriod: a down upstream fails every request, and the log
// must not grow with them.
const (
	upstreamLogBurst  = 5
	upstreamLogPeriod = 10 * time.Second
)

// NewHandler returns the reverse proxy o describes.
func NewHandler(o Options) (http.Handler, error) {
	if err := o.Limits.Validate(); err != nil {
		return nil, err
	}
	if o.OnCut == nil {
		o.OnCut = func(string) {}
	}
	p := &reverse{o: o, inFlight: newInFlight(o.Limits), log: slog.New(loglimit.Handler(o.Log.Handler(), upstreamLogBurst, upstreamLogPeriod))}
	p.rp = p.newReverseProxy()
	return p, nil
}

// reverse is the proxy: httputil's, with the request's body and count
// held to Limits around it.
type reverse struct {
	o        Options
	rp       *httputil.ReverseProxy
	inFlight *inFlight
	log      *slog.Logger // rate-limited
}

func (p *reverse) newReverseProxy() *httputil.ReverseProxy {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	transport.ResponseHeaderTimeout = p.o.Timeout
	transport.MaxIdleConnsPerHost = 256
	rp := &httputil.ReverseProxy{
		Rewrite:      p.o.rewrite,
		Transport:    transport,
		BufferPool:   buffers{},
		ErrorHandler: p.failed,
	}
	if p.o.Observe != nil { // else the gate's path pays nothing for it
		rp.ModifyResponse = func(resp *http.Response) error {
			if o, ok := resp.Request.Context().Value(sentKey{}).(*sent); ok {
				if failed, _ := o.body.clientFailed(time.Now()); !failed {
					p.o.Observe(o.queue, o.voice, resp.StatusCode, time.Since(o.at()))
				}
			}
			return nil
		}
	}
	return rp
}

// rewrite points pr at the upstream and tells it who the pass holder is.
func (o Options) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(o.Upstream)
	pr.SetXForwarded()
	strip(pr.Out.Header)
	if c, ok := gate.FromContext(pr.In.Context()); ok {
		if reqcheck.HasBearer(pr.Out.Header) {
			pr.Out.Header.Del("Authorization") // the pass it came in with, in any spelling the gate read
		}
		token, _ := gate.PassFromContext(pr.In.Context())
		// Header.Set three times, in one allocation: strip removed
		// any a client sent, and the names are canonical.
		v := []string{c.Subject, c.Queue, token}
		h := pr.Out.Header
		h[gate.HeaderSub], h[gate.HeaderQueue], h[gate.HeaderPass] = v[0:1:1], v[1:2:2], v[2:3:3]
	}
}

// failed answers a request the upstream did not answer. What the client
// broke off (it went away, its body stopped or fell behind Limits) is not
// the upstream's failure: no warning, and the controller does not hear
// it as the page's error.
func (p *reverse) failed(w http.ResponseWriter, r *http.Request, err error) {
	o, _ := r.Context().Value(sentKey{}).(*sent)
	var b *body
	if o != nil {
		b = o.body
	}
	clientFailed, slow := b.clientFailed(time.Now())
	switch {
	case slow:
		p.o.OnCut(CutSlowBody)
		p.log.DebugContext(r.Context(), "request body too slow", "path", loglimit.String(r.URL.Path))
		bodyTooSlow(w, r)
		return
	case clientFailed:
		p.o.OnCut(CutClientAbort)
		p.log.DebugContext(r.Context(), "request body broken off", "err", err, "path", loglimit.String(r.URL.Path))
		bodyIncomplete(w, r)
		return
	case errors.Is(err, context.Canceled):
		p.o.OnCut(CutClientAbort)
		p.log.DebugContext(r.Context(), "client went away", "path", loglimit.String(r.URL.Path))
		return // nobody to answer
	}
	if o != nil && o.queue != "" && p.o.Observe != nil {
		p.o.Observe(o.queue, o.voice, 0, time.Since(o.at()))
	}
	p.log.WarnContext(r.Context(), "upstream failed", "err", err, "path", loglimit.String(r.URL.Path))
	badGateway(w, r)
}

func (p *reverse) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s, refused := p.inFlight.take(r)
	if refused != "" {
		p.o.OnCut(refused)
		if r.Body != nil && r.Body != http.NoBody {
			// Nothing of the body is wanted: close rather than read what
			// is left of it (a drip) to keep the connection.
			w.Header().Set("Connection", "close")
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		}
		tooMany(w, r)
		return
	}
	defer p.inFlight.give(s)
	now := time.Now()
	r, b := holdBody(w, r, p.o.Limits, now)
	if b != nil {
		defer b.done()
	}
	o := &sent{start: now, body: b}
	if c, ok := gate.FromContext(r.Context()); ok {
		o.queue, o.voice = c.Queue, c.Subject
	}
	if b != nil || (p.o.Observe != nil && o.queue != "") {
		r = r.WithContext(context.WithValue(r.Context(), sentKey{}, o))
	}
	p.rp.ServeHTTP(w, r)
}

// sent is a request on its way upstream: for Observe, its room and
// admission and when it was all sent; for the failure's answer, its body.
type sent struct {
	queue, voice string
	start        time.Time
	body         *body // nil: none
}

// at is when the request was all sent: its body's last byte, or its start.
func (s *sent) at() time.Time {
	if s.body != nil {
		return s.body.sentAt()
	}
	return s.start
}

type sentKey struct{}

// copyBufferSize is the buffer httputil.ReverseProxy copies a response
// body through, the size it allocates for each response without a pool.
const copyBufferSize = 32 << 10

// copyBuffers are the response-copy buffers of the reverse proxy, reused:
// without them every proxied response allocated (and the runtime cleared)
// 32 KB, most of the bytes allocated per gated request and so most of the
// garbage collector's work (docs/PERFORMANCE.md, "What the gate adds to a
// bare proxy"). Pointers to arrays, so that putting one back allocates
// nothing.
var copyBuffers = sync.Pool{New: func() any { return new([copyBufferSize]byte) }}

// buffers is copyBuffers as an httputil.BufferPool.
type buffers struct{}

func (buffers) Get() []byte { return copyBuffers.Get().(*[copyBufferSize]byte)[:] }

func (buffers) Put(b []byte) {
	if len(b) == copyBufferSize {
		copyBuffers.Put((*[copyBufferSize]byte)(b))
	}
}

// strip removes from h what is waitroom's and not the upstream's: any
// X-Waitroom-* a client sent, in any spelling (X_Waitroom_Sub too, which
// some servers read as the same header), so the ones set from the pass are
// the only ones; and waitroom's own cookies, the place and pass
// credentials, so the upstream learns who the user is from X-Waitroom-Sub
// alone (and gets the pass that was checked in X-Waitroom-Pass, to end
// the turn with), never from a second, unchecked copy.
func strip(h http.Header) {
	for k := range h {
		if len(k) >= len(headerPrefix) && strings.EqualFold(strings.ReplaceAll(k[:len(headerPrefix)], "_", "-"), headerPrefix) {
			delete(h, k)
		}
	}
	cookies := h["Cookie"]
	if !slices.ContainsFunc(cookies, hasOwnCookie) {
		return // the common case: nothing to rebuild
	}
	// Every gated request carries its pass cookie: one builder, no list.
	var kept strings.Builder
	for _, line := range cookies {
		for part := range strings.SplitSeq(line, ";") {
			part = strings.TrimSpace(part)
			name, _, _ := strings.Cut(part, "=")
			if name != "" && !ownCookie(name) {
				if kept.Len() > 0 {
					kept.WriteString("; ")
				}
				kept.WriteString(part)
			}
		}
	}
	if kept.Len() == 0 {
		delete(h, "Cookie")
		return
	}
	h["Cookie"] = []string{kept.String()}
}

const headerPrefix = "X-Waitroom-"

func hasOwnCookie(line string) bool {
	return strings.Contains(line, "wr_place_") || strings.Contains(line, "wr_pass_")
}

// ownCookie reports whether a cookie is one of waitroom's credentials,
// for any queue, with or without the __Host- prefix.
func ownCookie(name string) bool {
	name = strings.TrimPrefix(name, "__Host-")
	return strings.HasPrefix(name, "wr_place_") || strings.HasPrefix(name, "wr_pass_")
}

const badGatewayHTML = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Temporarily unavailable</title></head>` +
	`<body><h1>Temporarily unavailable</h1><p>The page behind the waiting room is not answering. Please try again in a moment.</p></body></html>`

// bodyTooSlow answers 408 to a request whose body fell behind Limits,
// and closes the connection: what is left of the body is not waited for.
func bodyTooSlow(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	answer(w, r, http.StatusRequestTimeout, "0", "body_too_slow", "the request body arrived too slowly")
}

// bodyIncomplete answers 400 to a request whose body the client broke
// off, if it still listens.
func bodyIncomplete(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	answer(w, r, http.StatusBadRequest, "0", "body_incomplete", "the request body ended before it was complete")
}

// tooMany answers 429 to a request past the in-flight caps.
func tooMany(w http.ResponseWriter, r *http.Request) {
	answer(w, r, http.StatusTooManyRequests, "1", "too_many_in_flight", "too many requests in flight for this pass or address; try again shortly")
}

// answer writes an error with a stable code in the form the client asked
// for: a short page for a browser, else JSON.
func answer(w http.ResponseWriter, r *http.Request, status int, retryAfter, code, message string) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if retryAfter != "0" {
		h.Set("Retry-After", retryAfter)
	}
	if strings.Contains(r.Header.Get("Accept"), "text/html") {
		h.Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>` + http.StatusText(status) + `</title></head><body><h1>` +
			http.StatusText(status) + `</h1><p>` + message + `.</p></body></html>`))
		return
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"error":{"code":"` + code + `","message":"` + message + `"}}` + "\n"))
}

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
