package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// When the waiting room itself cannot decide: what the gate does while its
// Checker cannot tell whether a pass opens (the waitroom's Redis, or the
// waitroom, away). Only that: a bad, expired or forged pass, and an
// ambiguous path, are refused in every mode, exactly as when all is well.

// FailMode is what the gate does while its Checker cannot tell
// (Options.Fail).
type FailMode string

const (
	// FailClosed, the default: a holder of a pass that verifies offline
	// (signature, audience and expiry against the keys the gate already
	// holds; no revocation or sharing check) goes through; everyone else
	// gets "waiting room unavailable, retrying" (503): a page that reloads
	// itself for browsers, JSON with code unavailable for API clients.
	FailClosed FailMode = "closed"
	// FailOpen: everyone goes through, with or without a pass, while the
	// Checker cannot tell; each such request is counted (OnFailOpen) and
	// logged at most once a minute. For a site whose order page must never
	// be blocked by the waiting room.
	FailOpen FailMode = "open"
	// FailStrict: nobody goes through, not even with a valid pass (503).
	FailStrict FailMode = "strict"
)

// ParseFailMode reads a FailMode by name: closed, open or strict.
func ParseFailMode(s string) (FailMode, error) {
	switch m := FailMode(s); m {
	case FailClosed, FailOpen, FailStrict:
		return m, nil
	}
	return "", fmt.Errorf("gate: fail mode %q: want closed, open or strict", s)
}

// OfflineChecker is a Checker that can also check a pass with only what
// it already holds: its signature, issuer, audience and expiry against the
// keys it has (and, if it keeps them, the revocations it has seen; the
// remote check does not). The gate asks it while
// Check cannot tell (FailClosed, FailOpen); a Checker without it cannot
// let pass holders through offline. The remote check (Issuer, JWKSURL)
// is one.
type OfflineChecker interface {
	Checker
	CheckOffline(token string) (c Claims, ok bool)
}

// Pinger is a Checker that can tell whether it could check a pass now
// without being given one (waitroom's own gate: a Redis PING). The gate
// pings, in the background and at most once per second, to learn that
// the waiting room is away before a pass holder does, and that it is
// back. A Checker without it is learned from: while it cannot tell, one
// request a second still asks it.
type Pinger interface {
	Ping(ctx context.Context) error
}

// ErrBusy, wrapped in a Checker's or a Pinger's error, says the check
// could not be made because this process is overloaded (its connections
// to the waiting room all in use, say), not because the waiting room is
// away: the gate never counts it as away, so it never fails open on it.
// waitroom's own gate wraps go-redis's pool timeouts in it.
var ErrBusy = errors.New("gate: this process is too busy to check passes now")

// errRoomAway is the checker's error while the gate knows the waiting
// room is away and does not ask it.
var errRoomAway = errors.New("gate: the waiting room cannot check passes now")

// Bounds of the gate's view of the waiting room's reach.
const (
	// probeEvery is how often, at most, the gate asks whether the waiting
	// room is back (or still there).
	probeEvery = time.Second
	// holdAway is how long a failed check keeps the waiting room away for
	// requests without a pass, with a Checker that cannot be pinged.
	holdAway = 5 * time.Second
	// probeTimeout bounds one ping.
	probeTimeout = 2 * time.Second
	// failOpenLogEvery is how often, at most, failing open is logged.
	failOpenLogEvery = time.Minute
)

// reach is the gate's view of whether its Checker can tell now, that is
// whether the waiting room (its Redis) is within reach: away since a check
// failed, or with a Pinger since a ping failed; back when a check or a
// ping answers. Requests never wait for a ping; they go by the last
// answer. A gate has one, whatever the rooms of its routes: they all ask
// the same Checker.
//
// Away means the waiting room is away, never that this process is busy:
// an error wrapping ErrBusy says nothing, and with a Pinger
// a failed check only asks for a ping. A check fails as well when this
// process queued too long for a connection or for CPU, which a flood of
// any endpoint can cause; the Pinger (waitroom's: a PING on a connection
// of its own, redisconn.Pinger) does not queue behind the requests, so
// only a waiting room that does not answer it is away.
type reach struct {
	ctx     context.Context // bounds the pings (New's)
	pinger  Pinger          // nil: learned from the checks
	offline bool            // the checker can check offline: skip it while away

	away    atomic.Int64 // UnixNano since when the waiting room is away; 0: there
	failed  atomic.Int64 // UnixNano of the last failed check
	probed  atomic.Int64 // UnixNano of the last probe started
	probing atomic.Bool
	lastErr atomic.Pointer[string]
}

// learn records what a check said (ok, err). Only a pass that opened, or
// was refused as shared, proves the waiting room answered: a forged pass
// is refused without asking it. An error after the request itself went
// away (its context done) says nothing of the waiting room, nor one
// wrapping ErrBusy; with a Pinger, no check's error does: it asks for a
// ping, which decides.
func (rc *reach) learn(ctx context.Context, ok bool, err error) {
	switch {
	case err == nil && ok || errors.Is(err, ErrUsedElsewhere):
		rc.back()
	case err == nil || ctx.Err() != nil || errors.Is(err, errRoomAway) || errors.Is(err, ErrBusy):
	case rc.pinger != nil:
		rc.probe()
	default:
		rc.gone(err)
		rc.probed.Store(time.Now().UnixNano()) // the failed check was this second's probe
	}
}

// pinged records what a ping said.
func (rc *reach) pinged(err error) {
	switch {
	case err == nil:
		rc.back()
	case rc.ctx.Err() != nil || errors.Is(err, ErrBusy):
	default:
		rc.gone(err)
	}
}

// back records that the waiting room answered.
func (rc *reach) back() {
	if rc.away.Load() != 0 {
		rc.away.Store(0)
	}
}

// gone records that the waiting room did not answer, with err.
func (rc *reach) gone(err error) {
	msg := err.Error()
	rc.lastErr.Store(&msg)
	now := time.Now().UnixNano()
	rc.failed.Store(now)
	rc.away.CompareAndSwap(0, now)
}

// isAway reports whether the waiting room is known to be away now. With a
// Pinger it pings in the background when the last ping is more than
// probeEvery old, so a waiting room that went away is seen before a pass
// holder comes, and one that is back is seen at once. Without, it counts
// as away for holdAway after a check failed (checks keep failing while
// pass holders come: one a second still asks).
func (rc *reach) isAway() bool {
	away := rc.away.Load() != 0
	if rc.pinger != nil {
		rc.probe()
		return away
	}
	return away && time.Now().UnixNano()-rc.failed.Load() < int64(holdAway)
}

// skip reports whether this check should not be made: the waiting room is
// away, the checker can check offline, and either a Pinger will say when
// it is back or this second's one request has already asked. Asking a
// waiting room that is away costs each request the checker's whole
// timeout.
func (rc *reach) skip() bool {
	if rc.away.Load() == 0 || !rc.offline {
		return false
	}
	if rc.pinger != nil {
		rc.probe()
		return true
	}
	now := time.Now().UnixNano()
	last := rc.probed.Load()
	return now-last < int64(probeEvery) || !rc.probed.CompareAndSwap(last, now)
}

// probe pings the waiting room in the background, once per probeEvery at
// most and one ping at a time. A ping that fails is tried once more at
// once, so that one late answer (this process short of CPU for a moment)
// does not make the waiting room away: one that is away fails both.
func (rc *reach) probe() {
	now := time.Now().UnixNano()
	last := rc.probed.Load()
	if now-last < int64(probeEvery) || rc.probing.Load() || !rc.probed.CompareAndSwap(last, now) {
		return
	}
	if !rc.probing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer rc.probing.Store(false)
		err := rc.ping()
		if err != nil && !errors.Is(err, ErrBusy) && rc.ctx.Err() == nil {
			err = rc.ping()
		}
		rc.pinged(err)
	}()
}

// ping is one ping, bounded by probeTimeout.
func (rc *reach) ping() error {
	ctx, cancel := context.WithTimeout(rc.ctx, probeTimeout)
	defer cancel()
	return rc.pinger.Ping(ctx)
}

// failsOpen reports whether FailOpen lets a request through now: only
// while the waiting room is known away, never because one check failed
// (with a Pinger, a failed check may be this process's own overload).
func (g *Gate) failsOpen() bool {
	return g.fail == FailOpen && g.reach.isAway()
}

// cannotTell decides a request for room rm the checker could not tell
// about, carrying token (or none), by the gate's fail mode. A pass that
// does not verify offline is refused as when all is well, in every mode:
// only what needs the waiting room is decided by the mode. FailOpen
// applies only while the waiting room is known away (failsOpen): a check
// that failed while it answers pings is decided as FailClosed decides it.
// A valid pass for another room's queue never opens rm: FailOpen lets its
// holder through as it lets everyone, unchecked and without its claims.
func (g *Gate) cannotTell(r *http.Request, rm *room, token string, fromCookie bool) (Claims, string, verdict) {
	if token != "" && g.offline != nil {
		c, ok := g.offline.CheckOffline(token)
		switch {
		case ok && c.Queue == rm.queue && g.fail != FailStrict:
			return c, token, admitted
		case ok && c.Queue == rm.queue:
			return Claims{}, "", unknown
		case ok && g.failsOpen():
			// Another room's pass: as if none (below).
		case fromCookie:
			return Claims{}, "", badCookie
		default:
			return Claims{}, "", noPass
		}
	}
	if g.failsOpen() {
		g.failedOpen(r, rm)
		return Claims{}, "", openedUnchecked
	}
	return Claims{}, "", unknown
}

// failOpenLog writes the fail-open line at most once per failOpenLogEvery,
// with the count of requests let through since the last one.
type failOpenLog struct {
	mu     sync.Mutex
	last   time.Time
	passed int64
}

// failedOpen counts, under its room's queue, and logs a request for room
// rm let through unchecked. The line counts the requests of every room,
// and names the room of the one that wrote it.
func (g *Gate) failedOpen(r *http.Request, rm *room) {
	if g.onFailOpen != nil {
		g.onFailOpen(rm.queue)
	}
	l := &g.openLog
	now := time.Now()
	l.mu.Lock()
	l.passed++
	if !l.last.IsZero() && now.Sub(l.last) < failOpenLogEvery {
		l.mu.Unlock()
		return
	}
	passed := l.passed
	l.last, l.passed = now, 0
	l.mu.Unlock()
	reason := ""
	if p := g.reach.lastErr.Load(); p != nil {
		reason = *p
	}
	g.log.WarnContext(r.Context(), "gate: the waiting room cannot check passes; failing open, everyone passes unchecked (fail mode open)",
		"queue", rm.queue, "passed_since_last_line", passed, "err", reason)
}

// unavailable answers 503 while the waiting room cannot decide: to a browser
// loading a page, Options.Unavailable; to anyone else (asking for JSON, a
// script's fetch), JSON with code unavailable.
func (g *Gate) unavailable(w http.ResponseWriter, r *http.Request) {
	if !wantsPage(r) {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the waiting room cannot check passes right now; try again shortly", "")
		return
	}
	g.away.ServeHTTP(w, r)
}

// unavailableRetry is the Retry-After, in seconds, of the gate's own 503s.
const unavailableRetry = 5

// plainPage is the page of a gate given no Unavailable: no script, no
// style, nothing a strict policy would block; it loads the address again
// after Retry-After.
var plainPage = []byte(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="` + strconv.Itoa(unavailableRetry) + `">
<title>The waiting room is briefly unavailable</title></head>
<body><h1>The waiting room is briefly unavailable</h1>
<p>Your place is kept. This page tries again by itself in a few seconds.</p></body></html>
`)

// plainUnavailable writes plainPage: 503, never cached.
func plainUnavailable(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", strconv.Itoa(unavailableRetry))
	h.Set("Content-Security-Policy", "default-src 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusServiceUnavailable)
	if r.Method != http.MethodHead {
		_, _ = w.Write(plainPage)
	}
}

// wantsPage reports whether r should get a page rather than JSON: a
// browser navigating (GET or HEAD, no Authorization) that did not ask for
// JSON (Accept) and is not a script's fetch (Sec-Fetch-Mode other than
// navigate; absent from older browsers and from tools, which get the page
// unless they ask for JSON).
func wantsPage(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if r.Header.Get("Authorization") != "" || strings.Contains(r.Header.Get("Accept"), "application/json") {
		return false
	}
	mode := r.Header.Get("Sec-Fetch-Mode")
	return mode == "" || mode == "navigate"
}

// navigating reports whether r is a browser loading a page (GET or HEAD,
// not asking for JSON, no Authorization): it gets pages and redirects,
// everything else JSON.
func navigating(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		!strings.Contains(r.Header.Get("Accept"), "application/json") && r.Header.Get("Authorization") == ""
}

// newReach returns the gate's view of whether its checker can tell.
func newReach(ctx context.Context, c Checker) *reach {
	rc := &reach{ctx: ctx}
	rc.pinger, _ = c.(Pinger)
	_, rc.offline = c.(OfflineChecker)
	return rc
}

// logger is opts' logger, or slog's default.
func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}
