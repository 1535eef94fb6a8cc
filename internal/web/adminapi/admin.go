package adminapi

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/backoffice/adminsession"
	"github.com/waitroom/waitroom/internal/backoffice/apitoken"
	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/backoffice/changes"
	"github.com/waitroom/waitroom/internal/backoffice/lockout"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/hygiene/crossorigin"
	"github.com/waitroom/waitroom/internal/hygiene/loglimit"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// Redis is the part of a go-redis client the admin API uses (the lockout,
// the audit log, API tokens and sessions); *redis.Client and
// *redis.ClusterClient satisfy it.
type Redis interface {
	audit.Redis
	apitoken.Redis
	adminsession.Redis
}

// adminRedisTimeout bounds each lockout and audit call (the default
// WAITROOM_REQUEST_TIMEOUT of the store's calls).
const adminRedisTimeout = 2 * time.Second

// auditPage is how many audit entries GET .../audit answers by default.
const auditPage = 100

var (
	errUnauthorized = &httpkit.Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "missing or wrong credential: an API token, the admin token, or a back office session",
		Authenticate: `Bearer realm="waitroom-admin"`}
	errAdminDisabled   = &httpkit.Error{Status: http.StatusForbidden, Code: "admin_disabled", Message: "the admin API is disabled: set WAITROOM_ADMIN_TOKEN or WAITROOM_OIDC_ISSUER to enable it"}
	errForbiddenRole   = &httpkit.Error{Status: http.StatusForbidden, Code: "forbidden_role", Message: "your role may not do this; ask an admin for a role that may"}
	errForbiddenQueue  = &httpkit.Error{Status: http.StatusForbidden, Code: "forbidden_queue", Message: "your role does not cover this queue"}
	errCrossSiteAdmin  = &httpkit.Error{Status: http.StatusForbidden, Code: "cross_site_admin", Message: "the admin API answers only its own back office page, not other sites' pages"}
	errTooManyAttempts = &httpkit.Error{Status: http.StatusTooManyRequests, Code: "too_many_attempts", Message: "too many failed admin attempts from this address; try again after the time in Retry-After"}
	errInvalidLimit    = &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_limit", Message: "limit must be an integer from 1 to " + strconv.Itoa(audit.MaxEntries), Field: "limit"}
	// errAdminNoRedis is a wiring mistake (Options.Redis unset), answered
	// 503 like a Redis outage and logged.
	errAdminNoRedis = errors.New("adminapi: the admin API has no Redis (Options.Redis) for its lockout and audit log")
)

// adminGuard holds what the admin API checks its callers with.
type adminGuard struct {
	lockout *lockout.Lockout  // nil without Redis: every admin call is refused
	audit   *audit.Log        // nil without Redis
	digests *lockout.Digester // keys the admin token's digests for the lockout script
	want    []byte            // the admin token's digest; nil: no break-glass token
	// tokens are the API tokens; sessions, the sign-ins of people
	// through OIDC; signIn, that sign-in (nil: not configured).
	tokens   *apitoken.Tokens
	sessions *adminsession.Sessions
	signIn   *adminsession.SignIn
	// locked are the clients this replica saw the lockout lock, until
	// when: their next credentials are refused without any Redis work.
	locked *lru.Cache[string, time.Time]
	// breakGlass rate-limits the WARN line of each use of the admin token.
	breakGlass *loglimit.Every
}

// lockedClients bounds the locked clients a replica remembers.
const lockedClients = 4096

func newAdminGuard(o Options) adminGuard {
	g := adminGuard{digests: lockout.NewDigester(), audit: o.Audit, tokens: o.APITokens, sessions: o.Sessions, signIn: o.SignIn,
		breakGlass: loglimit.NewEvery(time.Minute)}
	g.locked, _ = lru.New[string, time.Time](lockedClients) // a positive size cannot fail
	if o.AdminToken != "" {
		g.want = g.digests.Digest(o.AdminToken)
	}
	if o.Redis != nil {
		// None can fail with a client and a valid policy.
		// Failed admin attempts are limited per client address, for every
		// replica: by default 10 failures in a minute lock the address for
		// a minute, then 2, 4, 8 ... up to an hour, for a day after its
		// last failure (lockout.DefaultPolicy).
		policy := o.Lockout
		if policy == (lockout.Policy{}) {
			policy = lockout.DefaultPolicy
		}
		g.lockout, _ = lockout.New(o.Redis, policy)
		if g.audit == nil {
			g.audit, _ = audit.New(o.Redis)
		}
		if g.tokens == nil {
			// A key of this process's own: tokens it makes are good on
			// this replica only (cmd/waitroom gives the shared one).
			g.tokens, _ = apitoken.New(o.Redis, random32())
		}
		if g.sessions == nil {
			g.sessions, _ = adminsession.New(o.Redis, adminsession.Options{})
		}
	}
	return g
}

func random32() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

// RequireAdmin lets through requests that carry a credential of the admin
// API, with who they stand for in their context (adminauth.FromContext):
// a bearer API token (wrt_...), the break-glass admin token, or the
// session cookie of a person signed in through OIDC. Without Redis
// nothing is let through (503).
//
// Every wrong credential is counted by the lockout, for every replica: 10
// failures in a minute lock the client's address (429). The admin token,
// which a person chose, is judged by the lockout script itself, so a
// locked address's guesses are not even compared. API tokens and session
// ids are 256 random bits, which no lockout needs to protect: a valid one
// passes even from a locked address (a script behind the same NAT as a
// guesser keeps working), and a wrong one is counted, or refused at once
// once this replica knows the address locked.
//
// Only a credential actually presented is judged. Any page the operator
// opens can make their browser send admin requests (an <img>, a form, a
// fetch and its preflight) from the operator's own address; were those
// counted, they would lock the operator out without ever guessing. So
// requests from another site are refused (403) and requests without a
// credential, or preflights, get 401; neither reaches the lockout. The
// session cookie is SameSite=Strict, so another site cannot send it
// either.
func (s *API) RequireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.adminEnabled {
			s.fail(w, r, errAdminDisabled)
			return
		}
		if s.admin.lockout == nil {
			s.fail(w, r, errAdminNoRedis)
			return
		}
		if !crossorigin.SameOrigin(r) {
			s.fail(w, r, errCrossSiteAdmin)
			return
		}
		p, err := s.adminPrincipal(r)
		if err != nil {
			if _, bearer := reqcheck.BearerToken(r); !bearer && s.adminCookie(r) != "" && httpkit.Classify(err).Status < 500 {
				// A session that ended (idle, signed out, ended by an
				// admin): the browser forgets it, so it is not presented,
				// and counted, again.
				s.setCookie(w, CookieName(s.cookieSecure), "", -1, http.SameSiteStrictMode)
			}
			s.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(adminauth.NewContext(r.Context(), p)))
	})
}

// adminPrincipal is who r's credential stands for, or the error to
// answer.
func (s *API) adminPrincipal(r *http.Request) (adminauth.Principal, error) {
	token, bearer := reqcheck.BearerToken(r)
	bearer = bearer && token != "" // an empty one is no credential: the cookie's, if any
	session := s.adminCookie(r)
	if r.Method == http.MethodOptions || !bearer && session == "" {
		return adminauth.Principal{}, errUnauthorized
	}
	client := s.clientIP.Addr(r)
	ctx, cancel := context.WithTimeout(r.Context(), adminRedisTimeout)
	defer cancel()
	switch {
	case bearer && strings.HasPrefix(token, apitoken.Prefix):
		tok, err := s.admin.tokens.Verify(ctx, token)
		if err == nil {
			return tok.Principal(), nil
		}
		if !errors.Is(err, apitoken.ErrInvalid) {
			return adminauth.Principal{}, err
		}
	case bearer:
		return s.breakGlass(ctx, r, client, token)
	default:
		p, ok, err := s.admin.sessions.Find(ctx, session)
		if err != nil {
			return adminauth.Principal{}, err
		}
		if ok {
			return p, nil
		}
	}
	return adminauth.Principal{}, s.adminFailure(ctx, r, client, func() (lockout.Result, error) {
		return s.admin.lockout.Fail(ctx, client)
	})
}

// breakGlass judges token as WAITROOM_ADMIN_TOKEN, by the lockout script.
// Each use is logged at WARN, at most once a minute per replica with the
// count since.
func (s *API) breakGlass(ctx context.Context, r *http.Request, client netip.Addr, token string) (adminauth.Principal, error) {
	want := s.admin.want
	if want == nil {
		want = random32() // no break-glass token: nothing matches
	}
	var res lockout.Result
	err := s.adminFailure(ctx, r, client, func() (lockout.Result, error) {
		var err error
		res, err = s.admin.lockout.Attempt(ctx, client, s.admin.digests.Digest(token), want)
		return res, err
	})
	if res.Verdict != lockout.Match {
		return adminauth.Principal{}, err
	}
	if n, ok := s.admin.breakGlass.Take(); ok {
		s.logger(r).Warn("admin API used with the break-glass WAITROOM_ADMIN_TOKEN; give people OIDC sign-in and scripts API tokens",
			"client", client.String(), "uses", n, "path", loglimit.String(r.URL.Path))
	}
	return adminauth.Principal{Actor: actor.Actor{Kind: actor.KindAdminToken, Name: actor.AdminTokenName},
		Grants: []adminauth.Grant{{Role: adminauth.Admin}}}, nil
}

// adminFailure runs judge (a lockout call) and turns its verdict on a
// failed credential into the answer: 429 while the client is locked
// (remembered on this replica until the lock ends: judge is then not even
// run), else 401. A Match is no failure: nil.
func (s *API) adminFailure(ctx context.Context, r *http.Request, client netip.Addr, judge func() (lockout.Result, error)) error {
	if d, ok := s.admin.lockedFor(client); ok {
		return lockedError(d)
	}
	res, err := judge()
	switch {
	case err != nil:
		return err
	case res.Verdict == lockout.Match:
		return nil
	case res.RetryAfter > 0:
		s.admin.locked.Add(clientip.Key(client), time.Now().Add(res.RetryAfter))
	}
	if res.Verdict == lockout.Locked {
		return lockedError(res.RetryAfter)
	}
	if res.RetryAfter > 0 {
		s.logger(r).Warn("admin API locked for a client after failed attempts",
			"client", client.String(), "lock", res.RetryAfter.String())
	}
	return errUnauthorized
}

// lockedFor is how long client stays locked, as far as this replica
// knows; false when it knows of no lock.
func (g *adminGuard) lockedFor(client netip.Addr) (time.Duration, bool) {
	until, ok := g.locked.Get(clientip.Key(client))
	if d := time.Until(until); ok && d > 0 {
		return d, true
	}
	return 0, false
}

// lockedError is 429 too_many_attempts with its Retry-After.
func lockedError(d time.Duration) error {
	e := *errTooManyAttempts
	e.RetryAfter = d
	return &e
}

// Need lets through requests whose principal may act as role, on the
// queue of the path when there is one: 403 forbidden_role when none of
// its grants has the role, 403 forbidden_queue when none that has it
// covers the queue. It runs after requireAdmin, per route.
func (s *API) Need(role adminauth.Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := allowed(r, role); err != nil {
				s.fail(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// allowed reports whether r's principal may act as role: on the queue of
// r's path when its route names one (an empty name covers nothing);
// else anywhere (a list shows only the queues the principal sees, and an
// admin's grant covers every queue).
func allowed(r *http.Request, role adminauth.Role) error {
	p, _ := adminauth.FromContext(r.Context())
	if p.Role() < role {
		return errForbiddenRole
	}
	if q, ok := routeQueue(r); ok && (q == "" || !p.Allows(role, q)) {
		return errForbiddenQueue
	}
	return nil
}

// routeQueue is the {queue} of r's route, and whether it has one.
func routeQueue(r *http.Request) (string, bool) {
	rctx := chi.RouteContext(r.Context())
	if rctx == nil {
		return "", false
	}
	for i, k := range rctx.URLParams.Keys {
		if k == "queue" {
			return rctx.URLParams.Values[i], true
		}
	}
	return "", false
}

// AuditLog answers a queue's audit log, newest first: ?limit= entries
// (default 100, at most audit.MaxEntries).
func (s *API) AuditLog(w http.ResponseWriter, r *http.Request) {
	q, ok := s.kit.KnownQueue(w, r, s.store)
	if !ok {
		return
	}
	n := auditPage
	if v := r.URL.Query().Get("limit"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > audit.MaxEntries {
			s.fail(w, r, errInvalidLimit)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminRedisTimeout)
	defer cancel()
	entries, err := s.admin.audit.List(ctx, q, n)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, struct {
		Queue   string        `json:"queue"`
		Entries []audit.Entry `json:"entries"`
	}{q, entries})
}

// record writes an admin change, already made, to the queue's audit log
// with who made it and the client's address. If Redis cannot take it the change stays
// made (it is done; failing the request would only invite a repeat) and
// the entry is logged at error level instead, so it is not lost. Entries
// hold setting values and user ids, never a token.
func (s *API) record(r *http.Request, q, action, target string, changes []audit.Change) {
	e := s.auditWho(r)
	e.Queue, e.Action, e.Target, e.Changes = q, action, target, changes
	// The change is made: record it even if the client has gone.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), adminRedisTimeout)
	defer cancel()
	if _, err := s.admin.audit.Record(ctx, e); err != nil {
		b, _ := json.Marshal(e)
		s.logger(r).Error("audit log not written; the change was made", "err", err, "entry", string(b))
	}
}

// auditWho is who makes the change r asks for, as the audit log records
// it.
func (s *API) auditWho(r *http.Request) audit.Entry {
	e := audit.Entry{ClientIP: s.clientIP.Addr(r).String(), RequestID: middleware.GetReqID(r.Context())}
	if p, ok := adminauth.FromContext(r.Context()); ok {
		e.Actor = &p.Actor
	}
	return e
}

// settingChanges are the audit log's changes of a settings request
// (changes.Changes over the admin view).
func settingChanges(requested map[string]json.RawMessage, before QueueView, after *QueueView) []audit.Change {
	return changes.Changes(requested, before, after)
}

// requestedRefill is PUT .../refill-size as the PATCH field it stands for.
func requestedRefill(n int) map[string]json.RawMessage {
	return map[string]json.RawMessage{"refill_size": audit.Value(n)}
}

// RemoveUser is the operator taking the user named in the path out of
// the line, or ending their admission; where the user stood goes to the
// audit log.
func (s *API) RemoveUser(w http.ResponseWriter, r *http.Request) {
	q, user, err := httpkit.PathUser(r)
	if err == nil {
		var before queue.Ticket
		if before, err = s.inspector.Remove(r.Context(), q, user); err == nil {
			s.recordRemoval(r, q, user, before)
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// recordRemoval audits the operator taking user out: where they stood
// before, and "removed".
func (s *API) recordRemoval(r *http.Request, q, user string, before queue.Ticket) {
	s.record(r, q, "remove_user", user, []audit.Change{{Field: "place", Old: placeState(before), New: audit.Value("removed")}})
}

// placeState is where a user stood, as the audit shows it.
func placeState(t queue.Ticket) json.RawMessage {
	v := struct {
		Status   queue.Status `json:"status"`
		Position int64        `json:"position,omitempty"`
	}{Status: t.Status}
	if t.Status == queue.Waiting {
		v.Position = t.Position
	}
	return audit.Value(v)
}
