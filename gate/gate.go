// Package gate puts a waitroom entry-pass check in front of an order page
// written in Go: one http.Handler middleware that lets a request through
// only with a valid pass for its queue and gives the handler the pass's
// claims (FromContext).
//
//	g, err := gate.New(ctx, gate.Options{
//		Queue:       "default",
//		Issuer:      "https://waitroom.example",
//		JWKSURL:     "https://waitroom.example/.well-known/jwks.json",
//		VerifyURL:   "https://waitroom.example/api/v1/verify", // optional: see revocation
//		WaitingPage: "https://waitroom.example/q/default",
//	})
//	http.ListenAndServe(":8081", g.Handler(orderPage))
//
// A pass comes in the cookie wr_pass_{queue}, in Authorization: Bearer, or
// once in the query parameter wr_pass, which is how the waiting room hands
// it over: the gate checks it, moves it into the HttpOnly cookie and
// redirects to the same URL without it, so it does not stay in the address
// bar, the history or the upstream's logs.
//
// Passes are checked offline against the waitroom's JWKS, which is cached,
// refreshed every few minutes and at once (at most every 30 s) when a pass
// names an unknown key. Verified passes are cached until their exp. Offline
// checks do not see revocation (a user who left, entered again or was
// removed); with VerifyURL set, the gate also asks the waitroom at most
// once per RecheckInterval and pass, so a revoked pass stops opening within
// that interval.
package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"golang.org/x/time/rate"

	"github.com/waitroom/waitroom/internal/pass"
)

// Claims are what a valid pass says about its holder.
type Claims struct {
	Queue   string    // the queue the pass admits to (aud)
	Subject string    // the member id holding the admission (sub)
	ID      string    // the pass's unique id (jti)
	Expires time.Time // when the admission ends at the latest (exp)
}

type ctxKey struct{}

// FromContext returns the claims of the pass that let the request in.
func FromContext(ctx context.Context) (Claims, bool) {
	c, ok := ctx.Value(ctxKey{}).(Claims)
	return c, ok
}

// Checker decides whether a pass opens the gate now: ok = false for a pass
// that does not (invalid, expired, revoked), err when it cannot tell now
// (the gate answers 503). Options.Checker replaces the remote check;
// waitroom's own reverse-proxy gate checks against its keys and Redis.
type Checker interface {
	Check(ctx context.Context, token string) (c Claims, ok bool, err error)
}

// Options configure a gate. Queue, and either Checker or Issuer and
// JWKSURL, are required.
type Options struct {
	Queue string
	// Issuer is the waitroom's WAITROOM_ISSUER.
	Issuer string
	// JWKSURL is the waitroom's /.well-known/jwks.json.
	JWKSURL string
	// VerifyURL, when set, is the waitroom's /api/v1/verify, asked at most
	// once per RecheckInterval and pass so revocation closes the gate.
	VerifyURL string
	// RecheckInterval defaults to 2 s.
	RecheckInterval time.Duration
	// WaitingPage is where browsers without a valid pass are sent: an
	// absolute URL, or a path on this site ("/q/default"), which then gets
	// the original path and query as ?return= so the waiting page can send
	// the user back there. Empty: every refusal is a 401.
	WaitingPage string
	// Bypass lists path prefixes that pass without a pass ("/static/").
	Bypass []string
	// InsecureCookie drops Secure from the pass cookie: for local
	// development over plain http only, never in production.
	InsecureCookie bool
	// Client makes the JWKS and verify requests; default: 5 s timeout.
	Client *http.Client
	// Checker replaces the check through JWKSURL and VerifyURL.
	Checker Checker
}

// Gate is the middleware. Build it with New.
type Gate struct {
	queue       string
	cookie      string
	checker     Checker
	waitingPage string
	sameSite    bool // waitingPage is a path on this site: add ?return=
	bypass      []string
	secure      bool
}

// MaxCachedPasses bounds the passes a gate keeps verified.
const MaxCachedPasses = 100000

// New returns a gate for opts. With the remote check, ctx bounds the
// goroutine that refreshes the JWKS.
func New(ctx context.Context, opts Options) (*Gate, error) {
	if opts.Queue == "" {
		return nil, errors.New("gate: Queue is required")
	}
	g := &Gate{
		queue:       opts.Queue,
		cookie:      CookieName(opts.Queue),
		checker:     opts.Checker,
		waitingPage: opts.WaitingPage,
		sameSite:    strings.HasPrefix(opts.WaitingPage, "/") && !strings.HasPrefix(opts.WaitingPage, "//"),
		bypass:      opts.Bypass,
		secure:      !opts.InsecureCookie,
	}
	if opts.WaitingPage != "" && !g.sameSite {
		u, err := url.Parse(opts.WaitingPage)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, errors.New("gate: WaitingPage must be an absolute http(s) URL or a path")
		}
	}
	if g.checker == nil {
		c, err := newRemoteChecker(ctx, opts)
		if err != nil {
			return nil, err
		}
		g.checker = c
	}
	return g, nil
}

// Headers that name the holder of a valid pass: ForwardAuth answers with
// them, and waitroom's reverse-proxy gate sets them on the requests it
// forwards (removing any a client sent).
const (
	HeaderSub   = "X-Waitroom-Sub"
	HeaderQueue = "X-Waitroom-Queue"
)

// ForwardAuth answers a proxy's authorisation subrequest (nginx
// auth_request, Traefik forwardAuth, Envoy ext_authz over HTTP): 204 with
// HeaderSub and HeaderQueue when the request carries a valid pass (cookie
// or bearer), 401 when not, 503 when it cannot tell. The proxy sends
// refused users to the waiting page itself (see deploy/nginx).
func (g *Gate) ForwardAuth(w http.ResponseWriter, r *http.Request) {
	c, ok, _, err := g.checkRequest(r)
	switch {
	case err != nil:
		unavailable(w)
	case !ok:
		writeError(w, http.StatusUnauthorized, "pass_required", "a valid entry pass is required", "")
	default:
		h := w.Header()
		h.Set(HeaderSub, c.Subject)
		h.Set(HeaderQueue, c.Queue)
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
	}
}

// HeaderOriginalURI names the header in which a proxy doing forward auth
// passes the request it refused to Refused (nginx: $request_uri).
const HeaderOriginalURI = "X-Original-URI"

// Refused answers, on a proxy's behalf, a request it refused after
// ForwardAuth (nginx: error_page 401 to a location that proxies here):
// exactly as the gate itself would, a 303 to the waiting page with the
// original path as ?return= for browsers, 401 JSON for API clients. The
// proxy passes the original request line in HeaderOriginalURI; it only
// ever becomes a same-site return path.
func (g *Gate) Refused(w http.ResponseWriter, r *http.Request) {
	orig := r.Clone(r.Context())
	orig.URL = &url.URL{Path: "/"}
	if u, err := url.ParseRequestURI(r.Header.Get(HeaderOriginalURI)); err == nil && SameSitePath(u.RequestURI()) {
		q := u.Query()
		q.Del("wr_pass")
		u.RawQuery = q.Encode()
		orig.URL = u
	}
	_, fromCookie := g.token(r)
	g.refuse(w, orig, fromCookie)
}

// MaxReturnBytes bounds a return path.
const MaxReturnBytes = 2048

// SameSitePath reports whether p may be a return path: a path on this
// site ("/order?event=7"), never an absolute or scheme-relative URL or
// anything a browser might read as one ("//evil.example", "/\\evil",
// control characters), so the waiting page cannot be made to send anyone
// to another site.
func SameSitePath(p string) bool {
	if len(p) == 0 || len(p) > MaxReturnBytes || p[0] != '/' || (len(p) > 1 && (p[1] == '/' || p[1] == '\\')) {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil
}

// CookieName is the cookie that carries queue's pass: wr_pass_{queue}.
func CookieName(queue string) string { return "wr_pass_" + queue }

// Handler lets requests with a valid pass through to next, with the
// pass's claims in the request context.
func (g *Gate) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A hand-over is taken on any path, bypassed ones too, so a pass
		// in a URL never travels on to the upstream or its logs.
		if r.URL.RawQuery != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			if q := r.URL.Query(); q.Has("wr_pass") {
				g.claim(w, r, q)
				return
			}
		}
		for _, p := range g.bypass {
			if strings.HasPrefix(r.URL.Path, p) {
				next.ServeHTTP(w, r)
				return
			}
		}
		c, ok, fromCookie, err := g.checkRequest(r)
		switch {
		case err != nil:
			unavailable(w)
		case !ok:
			g.refuse(w, r, fromCookie)
		default:
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, c)))
		}
	})
}

// checkRequest checks the pass a request carries: ok with its claims, not
// ok when it has none or a bad one (fromCookie: the bad one is in the
// cookie), or err when the checker cannot tell now.
func (g *Gate) checkRequest(r *http.Request) (c Claims, ok, fromCookie bool, err error) {
	token, fromCookie := g.token(r)
	if token == "" {
		return Claims{}, false, false, nil
	}
	c, ok, err = g.check(r.Context(), token)
	return c, ok, fromCookie, err
}

// check asks the checker, and refuses a valid pass for another queue.
func (g *Gate) check(ctx context.Context, token string) (Claims, bool, error) {
	c, ok, err := g.checker.Check(ctx, token)
	if err != nil || !ok || c.Queue != g.queue {
		return Claims{}, false, err
	}
	return c, true, nil
}

// token returns the pass a request carries (PassFrom), with the cookie
// name made once.
func (g *Gate) token(r *http.Request) (token string, fromCookie bool) {
	return passFrom(r, g.cookie)
}

// PassFrom returns the pass a request carries for queue: the
// Authorization bearer token, else the queue's pass cookie; fromCookie
// says which. An order page that forwards the pass (to waitroom's done
// endpoint, say) reads it here.
func PassFrom(r *http.Request, queue string) (token string, fromCookie bool) {
	return passFrom(r, CookieName(queue))
}

func passFrom(r *http.Request, cookie string) (token string, fromCookie bool) {
	if t, ok := BearerToken(r); ok {
		return t, false
	}
	if c, err := r.Cookie(cookie); err == nil && c.Value != "" {
		return c.Value, true
	}
	return "", false
}

// BearerToken returns the token of an "Authorization: Bearer <token>"
// header; the scheme is case-insensitive (RFC 9110, section 11.1).
func BearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const scheme = "bearer "
	if len(h) <= len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	return strings.TrimSpace(h[len(scheme):]), true
}

// claim takes a pass handed over in ?wr_pass=: a valid one goes into the
// cookie and the browser is sent to the same URL without it; an invalid
// one is refused like a missing pass.
func (g *Gate) claim(w http.ResponseWriter, r *http.Request, q url.Values) {
	token := q.Get("wr_pass")
	q.Del("wr_pass")
	clean := *r.URL
	clean.RawQuery = q.Encode()
	c, ok, err := g.check(r.Context(), token)
	if err != nil {
		unavailable(w)
		return
	}
	if !ok {
		r2 := r.Clone(r.Context())
		r2.URL = &clean
		g.refuse(w, r2, false)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     g.cookie,
		Value:    token,
		Path:     "/",
		Expires:  c.Expires,
		HttpOnly: true,
		Secure:   g.secure,
		SameSite: http.SameSiteLaxMode,
	})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, clean.RequestURI(), http.StatusSeeOther)
}

// refuse answers a request without a valid pass: browsers navigating
// (GET or HEAD, not asking for JSON, no Authorization header) go to the
// waiting page, everything else gets 401 JSON naming it. A bad cookie is
// deleted.
func (g *Gate) refuse(w http.ResponseWriter, r *http.Request, badCookie bool) {
	if badCookie {
		http.SetCookie(w, &http.Cookie{Name: g.cookie, Path: "/", MaxAge: -1, HttpOnly: true, Secure: g.secure, SameSite: http.SameSiteLaxMode})
	}
	page := g.waitingPage
	if ret := r.URL.RequestURI(); page != "" && g.sameSite && SameSitePath(ret) {
		page += "?return=" + url.QueryEscape(ret)
	}
	navigating := (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		!strings.Contains(r.Header.Get("Accept"), "application/json") && r.Header.Get("Authorization") == ""
	if page != "" && navigating {
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, page, http.StatusSeeOther)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="waitroom", error="invalid_token"`)
	writeError(w, http.StatusUnauthorized, "pass_required", "a valid entry pass is required: wait your turn in the waiting room", page)
}

// unavailable answers 503: the checker cannot tell now (the waitroom or
// its Redis away); clients retry.
func unavailable(w http.ResponseWriter) {
	writeError(w, http.StatusServiceUnavailable, "unavailable", "the waiting room cannot check passes right now; try again shortly", "")
}

func writeError(w http.ResponseWriter, status int, code, message, waitingPage string) {
	var body struct {
		Error struct {
			Code        string `json:"code"`
			Message     string `json:"message"`
			WaitingPage string `json:"waiting_page,omitempty"`
		} `json:"error"`
	}
	body.Error.Code, body.Error.Message, body.Error.WaitingPage = code, message, waitingPage
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// newRemoteChecker checks passes against a waitroom's JWKS (and, when
// set, its verify endpoint), through a pass.Cache.
func newRemoteChecker(ctx context.Context, opts Options) (Checker, error) {
	if opts.Issuer == "" || opts.JWKSURL == "" {
		return nil, errors.New("gate: Issuer and JWKSURL are required (or a Checker)")
	}
	client := opts.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{opts.JWKSURL}, keyfunc.Override{
		Client: client,
		// The waitroom publishes a key at least 5 minutes before it signs
		// (its JWKS max-age), so a refresh every 5 minutes sees it in
		// time; an unknown kid refreshes at once, at most every 30 s, so a
		// flood of forged kids cannot hammer the waitroom.
		RefreshInterval:   5 * time.Minute,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(30*time.Second), 1),
		RateLimitWaitMax:  time.Second,
		HTTPTimeout:       5 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("gate: JWKS: %w", err)
	}
	var current pass.CurrentFunc
	recheck := opts.RecheckInterval
	if opts.VerifyURL != "" {
		if recheck <= 0 {
			recheck = 2 * time.Second
		}
		current = verifyFunc(client, opts.VerifyURL)
	}
	cache, err := pass.NewCache(pass.NewVerifier(opts.Issuer, kf.Keyfunc), current, recheck, MaxCachedPasses)
	if err != nil {
		return nil, err
	}
	return CacheChecker(cache), nil
}

// verifyFunc asks a waitroom's /api/v1/verify whether a pass is still
// current: 200 yes, 401 no, anything else: cannot tell.
func verifyFunc(client *http.Client, verifyURL string) pass.CurrentFunc {
	return func(ctx context.Context, token string, c pass.Claims) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, verifyURL, nil)
		if err != nil {
			return false, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return false, fmt.Errorf("gate: verify: %w", err)
		}
		defer resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return true, nil
		case http.StatusUnauthorized:
			return false, nil
		default:
			return false, fmt.Errorf("gate: verify answered %s", resp.Status)
		}
	}
}

// CacheChecker is the Checker of a pass cache: invalid, expired and
// revoked passes are ok = false; only a failed revocation check is an
// error. The remote check is one; waitroom's own gate, which has its keys
// and Redis at hand, is another.
func CacheChecker(cache *pass.Cache) Checker { return cacheChecker{cache} }

type cacheChecker struct{ cache *pass.Cache }

func (c cacheChecker) Check(ctx context.Context, token string) (Claims, bool, error) {
	pc, err := c.cache.Check(ctx, token)
	if err != nil {
		if errors.Is(err, pass.ErrInvalid) {
			return Claims{}, false, nil
		}
		return Claims{}, false, err
	}
	return Claims{Queue: pc.Queue, Subject: pc.Subject, ID: pc.ID, Expires: pc.Expires}, true, nil
}
