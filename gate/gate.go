// Package gate puts a waitroom entry-pass check in front of an order page
// written in Go: one http.Handler middleware that lets a request through
// only with a valid pass for its queue and gives the handler the pass's
// claims (FromContext). One queue can guard the whole site (Options.Queue),
// or several rooms each their own paths (Options.Routes, Route).
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
// A pass comes in the cookie __Host-wr_pass_{queue} (CookieName) of the
// request's room, in
// Authorization: Bearer, or once in the query parameter wr_pass, which is
// how the waiting room sends it (a pass link): the gate checks it, moves it into the
// HttpOnly cookie and redirects to the same path on this site without it,
// so it does not stay in the address bar, the history or the upstream's
// logs. Each pass link is exchanged once (Options.PassLinks): a shared
// link admits one browser, not every one it reaches.
//
// The gate decides on the path as the upstream will resolve it
// (reqcheck.CleanPath: dot segments applied, slashes merged) and passes that
// same path on; a path servers could read more than one way (an encoded
// slash or dot, a backslash, a NUL) is refused with 400 invalid_path.
//
// Passes are checked offline against the waitroom's JWKS, which is cached,
// refreshed every few minutes and at once (at most every 30 s) when a pass
// names an unknown key. Verified passes are cached until their exp. Offline
// checks do not see revocation (a user who left, entered again or was
// removed); with VerifyURL set, the gate also asks the waitroom at most
// once per RecheckInterval and pass, so a revoked pass stops opening within
// that interval.
//
// While the check cannot be made (VerifyURL, or a Checker's store, not
// answering), Options.Fail decides (failmode.go): FailClosed, the default,
// lets passes that verify offline through and shows everyone else a page
// that retries by itself (503); FailOpen lets everyone through, counted
// (OnFailOpen) and logged once a minute; FailStrict lets nobody through.
// A bad, expired or forged pass is refused in every mode, and a pass for
// one room's queue never opens another's (FailOpen lets its holder
// through unchecked, as everyone, without its claims).
package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
)

// Checker decides whether a pass opens the gate now: ok = false for a pass
// that does not (invalid, expired, revoked), err when it cannot tell now
// (the gate answers 503), except ErrUsedElsewhere, which refuses the pass
// and tells its holder why. Options.Checker replaces the remote check;
// waitroom's own reverse-proxy gate checks against its keys and Redis.
// A Checker may also be an OfflineChecker and a Pinger, which the gate
// uses while Check cannot tell (Options.Fail).
type Checker interface {
	Check(ctx context.Context, token string) (c Claims, ok bool, err error)
}

// ErrUsedElsewhere, from a Checker, refuses a pass that was used from more
// client addresses than its holder could have (a shared pass): the gate
// sends a browser to the waiting page with reason=used_elsewhere and
// answers API clients 401 pass_used_elsewhere.
var ErrUsedElsewhere = errors.New("gate: the pass was used from too many client addresses")

// PassLinks remembers which passes were carried in ?wr_pass=, so each
// pass link is exchanged for a cookie once. Claim reports whether the
// pass id (jti) of queue is claimed for the first time; until is when the
// record may be forgotten (the pass's exp). An error answers 503.
type PassLinks interface {
	Claim(ctx context.Context, queue, id string, until time.Time) (first bool, err error)
}

// Options configure a gate. Queue or Routes, and either Checker or Issuer
// and JWKSURL, are required.
type Options struct {
	// Queue is the room of the whole site: every path (but Bypass) needs a
	// pass for it. With Routes, it is the room of the paths no route
	// covers; empty, those pass without a pass.
	Queue string
	// Routes send the site's paths to several rooms, each needing a pass
	// for its own queue (Route says which route a request takes).
	// ParseRoutes reads them as WAITROOM_GATE_ROUTES writes them.
	Routes []Route
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
	// the user back there. "{queue}" in it is replaced by the queue of the
	// request's room ("/q/{queue}"), which it must name when Routes lead
	// to more than one queue. Empty: every refusal is a 401.
	WaitingPage string
	// Bypass lists path prefixes that pass without a pass ("/static/").
	Bypass []string
	// BypassClient, when set, lets the requests it reports true for pass
	// without a pass: the site's own monitoring, its office. It must judge
	// the client's address as the site's trusted proxies give it, never a
	// header any client can send.
	BypassClient func(*http.Request) bool
	// InsecureCookie drops Secure from the pass cookie and with it the
	// __Host- prefix of its name: for local development over plain http
	// only, never in production.
	InsecureCookie bool
	// PassLinks makes each ?wr_pass= link single-use across every replica
	// of the site; nil: within this process only (one replica).
	PassLinks PassLinks
	// Client makes the JWKS and verify requests; default: 5 s timeout.
	Client *http.Client
	// Checker replaces the check through JWKSURL and VerifyURL.
	Checker Checker
	// Fail is what the gate does while the Checker cannot tell (it
	// returns an error: with the remote check, VerifyURL not answering):
	// FailClosed (the default), FailOpen or FailStrict.
	Fail FailMode
	// OnFailOpen, when set, is called for each request FailOpen lets
	// through unchecked, with the queue of the request's room: count them.
	OnFailOpen func(queue string)
	// Logger gets the line, at most once a minute, that says the gate
	// fails open; nil: slog.Default().
	Logger *slog.Logger
	// Unavailable is the page a browser loading a page gets while the
	// gate cannot check passes (a 503, which it writes itself): the
	// waitroom's own styled page in the visitor's language, say. nil: a
	// short plain page that says so and loads the address again after
	// Retry-After. Scripts and API clients get JSON either way.
	Unavailable http.Handler
	// SoldOut, when set, answers the requests without a valid pass of a
	// room whose sale is closed (soldout.go); nil: they are refused as
	// any other.
	SoldOut SoldOut

	// CommandURL, when set, is where the gate carries the order page's
	// commands (HeaderCommand in its answers): the waitroom's
	// "https://waitroom.example/api/v1/queues/{queue}/commands", {queue}
	// being the request's room's. The pass the request was let in with is
	// the call's credential. Without it (and without Commander) commands
	// are removed from the answers and nothing is done.
	CommandURL string
	// Commander replaces CommandURL: waitroom's own gate carries the
	// commands out itself.
	Commander Commander
	// OnCommand, when set, hears each command the order page gave: the
	// room's queue, the command ("done", "extend" or "other") and what
	// came of it (Commander's results, or "ignored": without one, and
	// for a command sent as a trailer or in a 1xx answer, which never
	// acts): count them.
	OnCommand func(queue, command, result string)

	// passClock is the time the remote check's pass cache and the
	// one-process PassLinks read (nil: time.Now): set by the package's tests only (export_test.go).
	passClock func() time.Time
}

// Gate is the middleware. Build it with New.
type Gate struct {
	queue        string
	table        *routeTable
	checker      Checker
	sameSite     bool // the waiting page is a path on this site: add ?return=
	bypass       []string
	bypassClient func(*http.Request) bool
	secure       bool
	passLinks    PassLinks

	// While the checker cannot tell (failmode.go).
	fail       FailMode
	offline    OfflineChecker // nil: the checker cannot check offline
	reach      *reach
	onFailOpen func(queue string)
	log        *slog.Logger
	openLog    failOpenLog
	away       http.Handler // the page while the checker cannot tell

	// The order page's commands (command.go).
	commander Commander // nil: removed, nothing done
	onCommand func(queue, command, result string)
	sold      SoldOut // nil: no sold-out page
}

// Queue is Options.Queue: the room of the whole site, or with routes of
// the paths no route covers ("": none).
func (g *Gate) Queue() string { return g.queue }

// MaxCachedPasses bounds the passes a gate keeps verified.
const MaxCachedPasses = 100000

// New returns a gate for opts. With the remote check, ctx bounds the
// goroutine that refreshes the JWKS.
func New(ctx context.Context, opts Options) (*Gate, error) {
	if opts.Queue == "" && len(opts.Routes) == 0 {
		return nil, errors.New("gate: Queue or Routes is required")
	}
	table, err := newRouteTable(opts.Routes, opts.Queue, opts.WaitingPage, !opts.InsecureCookie)
	if err != nil {
		return nil, err
	}
	g := &Gate{
		queue:        opts.Queue,
		table:        table,
		checker:      opts.Checker,
		sameSite:     strings.HasPrefix(opts.WaitingPage, "/") && !strings.HasPrefix(opts.WaitingPage, "//"),
		bypass:       opts.Bypass,
		bypassClient: opts.BypassClient,
		secure:       !opts.InsecureCookie,
		passLinks:    opts.PassLinks,
		fail:         opts.Fail,
		onFailOpen:   opts.OnFailOpen,
		log:          logger(opts.Logger),
		away:         opts.Unavailable,
		commander:    opts.Commander,
		onCommand:    opts.OnCommand,
		sold:         opts.SoldOut,
	}
	if g.away == nil {
		g.away = http.HandlerFunc(plainUnavailable)
	}
	if g.fail == "" {
		g.fail = FailClosed
	}
	if _, err := ParseFailMode(string(g.fail)); err != nil {
		return nil, err
	}
	if g.passLinks == nil {
		links, err := newMemoryPassLinks(MaxCachedPasses, opts.passClock)
		if err != nil {
			return nil, err
		}
		g.passLinks = links
	}
	for _, p := range opts.Bypass {
		if !strings.HasPrefix(p, "/") || !reqcheck.IsCanonical(p) {
			return nil, fmt.Errorf("gate: bypass prefix %q must be a clean path starting with /", p)
		}
	}
	if opts.WaitingPage != "" && !g.sameSite {
		u, err := url.Parse(strings.ReplaceAll(opts.WaitingPage, "{queue}", "q"))
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, errors.New("gate: WaitingPage must be an absolute http(s) URL or a path")
		}
	}
	if g.commander == nil && opts.CommandURL != "" {
		client := opts.Client
		if client == nil {
			client = &http.Client{Timeout: commandTimeout}
		}
		if g.commander, err = newRemoteCommander(client, opts.CommandURL); err != nil {
			return nil, err
		}
	}
	if g.checker == nil {
		c, err := newRemoteChecker(ctx, opts)
		if err != nil {
			return nil, err
		}
		g.checker = c
	}
	g.offline, _ = g.checker.(OfflineChecker)
	g.reach = newReach(ctx, g.checker)
	return g, nil
}

// CookieName is the cookie that carries queue's pass:
// __Host-wr_pass_{queue}, or wr_pass_{queue} when the cookie is not
// Secure (local development only). The __Host- prefix makes browsers
// refuse the cookie unless it is Secure, host-only and for the whole
// site, so another subdomain or a plain-http answer cannot plant one.
func CookieName(queue string, secure bool) string {
	if secure {
		return "__Host-wr_pass_" + queue
	}
	return "wr_pass_" + queue
}

// Handler lets requests with a valid pass for their room through to next,
// with the pass's claims in the request context; requests no route covers
// (and bypassed ones) go through without. next sees the path the gate
// decided on: the clean one.
func (g *Gate) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		// Every answer passes through w, which removes the order page's
		// command and, for a request let in with a pass, carries it out.
		w := &commandWriter{ResponseWriter: rw, g: g, ctx: r.Context()}
		sent := r.URL.EscapedPath()
		clean, err := reqcheck.CleanPath(sent)
		if err != nil {
			invalidPath(w)
			return
		}
		if clean != r.URL.Path || r.URL.RawPath != "" {
			r = withPath(r, clean)
		}
		rm, ok := g.roomOf(r, clean)
		if !ok {
			invalidPath(w)
			return
		}
		// A pass-link exchange is taken on any path, bypassed ones too, so a pass
		// in a URL never travels on to the upstream or its logs.
		if r.URL.RawQuery != "" {
			if q := r.URL.Query(); q.Has("wr_pass") {
				var done bool
				if r, done = g.exchangePassLink(w, r, rm, q, sent); done {
					return
				}
			}
		}
		if rm == nil || g.bypassed(r) {
			serve(next, w, r)
			return
		}
		w.queue = rm.queue
		c, token, v := g.judge(r, rm)
		if v == openedUnchecked {
			serve(next, w, withoutPass(r)) // no claims: nothing was checked
			return
		}
		if v != admitted {
			g.refuse(w, r, rm, v)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, admission{c, token}))
		w.ctx, w.token = r.Context(), token
		serve(next, w, r)
	})
}

// serve runs next with w, then takes the order page's command out of an
// answer next wrote no header of (net/http writes those headers itself,
// after next returns, where w does not see them), or out of the trailers
// of one it wrote.
func serve(next http.Handler, w *commandWriter, r *http.Request) {
	next.ServeHTTP(w, r)
	if w.wroteHeader {
		w.takeTrailer()
		return
	}
	w.take()
}

// withPath returns r with its URL's path set to the clean p, and its
// RequestURI to match, so no handler behind the gate reads the path as
// sent.
func withPath(r *http.Request, p string) *http.Request {
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path, u.RawPath = p, ""
	r2.URL = &u
	if r2.RequestURI != "" {
		r2.RequestURI = u.RequestURI()
	}
	return r2
}

// withoutPass returns r without the pass it may carry in Authorization or
// HeaderPass, for a request FailOpen lets through unchecked: what is
// behind the gate never gets a pass the gate did not check (another
// room's, say) as if it had. Cookies stay, as for an admitted request
// (waitroom's reverse proxy drops its own).
func withoutPass(r *http.Request) *http.Request {
	bearer := reqcheck.HasBearer(r.Header)
	if !bearer && r.Header.Values(HeaderPass) == nil {
		return r
	}
	r2 := new(http.Request)
	*r2 = *r
	r2.Header = r.Header.Clone()
	if bearer {
		r2.Header.Del("Authorization")
	}
	r2.Header.Del(HeaderPass)
	return r2
}

// bypassed reports whether r passes without a pass: its path is under a
// Bypass prefix, or its client is one BypassClient lets through.
func (g *Gate) bypassed(r *http.Request) bool {
	return g.bypassedPath(r.URL.Path) || (g.bypassClient != nil && g.bypassClient(r))
}

func (g *Gate) bypassedPath(p string) bool {
	for _, b := range g.bypass {
		if strings.HasPrefix(p, b) {
			return true
		}
	}
	return false
}

// errDuplicateCookie: a request carries the pass cookie (or HeaderPass)
// twice, one of them planted (by another subdomain, or over plain http
// before __Host-): which one the upstream reads is anyone's guess, so
// neither is taken.
var errDuplicateCookie = errors.New("gate: the pass cookie is set twice")

// verdict is what the gate makes of the pass a request carries.
type verdict int

const (
	admitted        verdict = iota
	noPass                  // none, or a bad one in Authorization
	badCookie               // a bad one in the cookie, which goes
	duplicate               // the cookie twice: 401 invalid_pass
	headerTwice             // two passes in the headers: 401 invalid_pass
	usedElsewhere           // a valid pass refused as shared
	unknown                 // the checker cannot tell now: 503
	openedUnchecked         // the checker cannot tell, FailOpen: through
)

// judge checks the pass a request for room rm carries: ForwardAuth,
// Refused and Handler are three doors on this one check.
func (g *Gate) judge(r *http.Request, rm *room) (Claims, string, verdict) {
	token, fromCookie, err := g.token(r, rm)
	if errors.Is(err, errHeaderTwice) {
		return Claims{}, "", headerTwice
	}
	if err != nil {
		return Claims{}, "", duplicate
	}
	if token == "" {
		if g.reach.isAway() {
			return g.cannotTell(r, rm, "", false)
		}
		return Claims{}, "", noPass
	}
	c, ok, err := g.check(r.Context(), token, rm)
	switch {
	case errors.Is(err, ErrUsedElsewhere):
		return Claims{}, "", usedElsewhere
	case err != nil:
		return g.cannotTell(r, rm, token, fromCookie)
	case !ok && fromCookie:
		return Claims{}, "", badCookie
	case !ok:
		return Claims{}, "", noPass
	}
	return c, token, admitted
}

// check asks the checker, and refuses a valid pass for another room's
// queue. While the waiting room is out of reach it does not ask
// (errRoomAway), when the pass can be checked offline instead
// (reach.skip).
func (g *Gate) check(ctx context.Context, token string, rm *room) (Claims, bool, error) {
	if g.reach.skip() {
		return Claims{}, false, errRoomAway
	}
	c, ok, err := g.checker.Check(ctx, token)
	g.reach.learn(ctx, ok, err)
	if err != nil || !ok || c.Queue != rm.queue {
		return Claims{}, false, err
	}
	return c, true, nil
}

// token returns the pass a request for room rm carries: in its headers
// (headerPass), else in the room's pass cookie (fromCookie);
// errDuplicateCookie when the cookie comes twice, errHeaderTwice when the
// headers carry more than one pass.
func (g *Gate) token(r *http.Request, rm *room) (token string, fromCookie bool, err error) {
	if t, found, err := headerPass(r.Header); found || err != nil {
		return t, false, err
	}
	cs := r.CookiesNamed(rm.cookie)
	switch {
	case len(cs) > 1:
		return "", true, errDuplicateCookie
	case len(cs) == 1 && cs[0].Value != "":
		return cs[0].Value, true, nil
	}
	return "", false, nil
}

// errHeaderTwice: a request's headers carry more than one pass (two
// Authorization lines, one of them a bearer; two HeaderPass lines; or a
// bearer token and a HeaderPass that differ). The gate would check one
// and the handler behind it might read the other, so neither is taken.
var errHeaderTwice = errors.New("gate: the pass comes twice in the headers")

// headerPass returns the pass h carries, the way a site's own API calls
// send it: Authorization: Bearer (any case, any spaces or tabs after the
// scheme: reqcheck.BearerScheme) or HeaderPass, or both when they carry
// the same pass. found is false when neither is there.
func headerPass(h http.Header) (token string, found bool, err error) {
	auth, passes := h.Values("Authorization"), h.Values(HeaderPass)
	if len(auth) == 0 && len(passes) == 0 {
		return "", false, nil // the common case of a browser: the cookie
	}
	bearer, isBearer := "", false
	for _, v := range auth {
		if t, ok := reqcheck.BearerScheme(v); ok {
			bearer, isBearer = t, true
		}
	}
	switch {
	case isBearer && len(auth) > 1, len(passes) > 1:
		return "", true, errHeaderTwice
	case isBearer && len(passes) == 1 && passes[0] != bearer:
		return "", true, errHeaderTwice
	case isBearer:
		return bearer, true, nil
	case len(passes) == 1:
		return passes[0], true, nil
	}
	return "", false, nil // Authorization of another scheme: the site's own
}
