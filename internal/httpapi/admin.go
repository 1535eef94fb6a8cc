package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/waitroom/waitroom/internal/audit"
	"github.com/waitroom/waitroom/internal/backoffice"
	"github.com/waitroom/waitroom/internal/crossorigin"
	"github.com/waitroom/waitroom/internal/lockout"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/reqcheck"
)

// Redis is the part of a go-redis client the admin API uses (the lockout
// and the audit log); *redis.Client and *redis.ClusterClient satisfy it.
type Redis = audit.Redis

// adminLockout limits failed admin attempts per client address, shared by
// every replica: 10 failures in a minute lock the address for a minute,
// then 2, 4, 8 ... up to an hour, for a day after its last failure.
var adminLockout = lockout.DefaultPolicy

// adminRedisTimeout bounds each lockout and audit call (the default
// WAITROOM_REQUEST_TIMEOUT of the store's calls).
const adminRedisTimeout = 2 * time.Second

// auditPage is how many audit entries GET .../audit answers by default.
const auditPage = 100

var (
	errCrossSiteAdmin  = &apiError{status: http.StatusForbidden, code: "cross_site_admin", message: "the admin API answers only its own back office page, not other sites' pages"}
	errTooManyAttempts = &apiError{status: http.StatusTooManyRequests, code: "too_many_attempts", message: "too many failed admin attempts from this address; try again after the time in Retry-After"}
	errInvalidLimit    = &apiError{status: http.StatusBadRequest, code: "invalid_limit", message: "limit must be an integer from 1 to " + strconv.Itoa(audit.MaxEntries), field: "limit"}
	// errAdminNoRedis is a wiring mistake (Options.Redis unset), answered
	// 503 like a Redis outage and logged.
	errAdminNoRedis = errors.New("httpapi: the admin API has no Redis (Options.Redis) for its lockout and audit log")
)

// adminGuard holds what the admin API keeps in Redis.
type adminGuard struct {
	lockout *lockout.Lockout  // nil without Redis: every admin call is refused
	audit   *audit.Log        // nil without Redis
	digests *lockout.Digester // keys the token's digests for the lockout script
	want    []byte            // the admin token's digest
}

func newAdminGuard(token string, rdb Redis) adminGuard {
	g := adminGuard{digests: lockout.NewDigester()}
	g.want = g.digests.Digest(token)
	if rdb != nil {
		// Neither can fail with a client and a valid policy.
		g.lockout, _ = lockout.New(rdb, adminLockout)
		g.audit, _ = audit.New(rdb)
	}
	return g
}

// requireAdmin lets through requests with the admin token. The token is
// judged by the lockout script: an address that failed too often is
// answered 429 without its token even being compared, and a failure is
// counted in Redis, for every replica. Without Redis nothing is let
// through (503).
//
// Only a token actually presented is judged. Any page the operator opens
// can make their browser send admin requests (an <img>, a form, a fetch
// and its preflight) from the operator's own address; were those counted,
// they would lock the operator out without ever guessing. So requests
// from another site are refused (403) and requests without a bearer token,
// or preflights, get 401; neither reaches the lockout. A browser cannot
// send the token cross-site anyway: it is no cookie, only the back office
// page holds it.
func (s *Server) requireAdmin(next http.Handler) http.Handler {
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
		token, ok := reqcheck.BearerToken(r)
		if !ok || token == "" || r.Method == http.MethodOptions {
			s.fail(w, r, errUnauthorized)
			return
		}
		client := s.clientIP.Addr(r)
		ctx, cancel := context.WithTimeout(r.Context(), adminRedisTimeout)
		res, err := s.admin.lockout.Attempt(ctx, client, s.admin.digests.Digest(token), s.admin.want)
		cancel()
		if err != nil {
			s.fail(w, r, err)
			return
		}
		switch res.Verdict {
		case lockout.Match:
			next.ServeHTTP(w, r)
		case lockout.Locked:
			w.Header().Set("Retry-After", retryAfter(res.RetryAfter))
			s.fail(w, r, errTooManyAttempts)
		default:
			if res.RetryAfter > 0 {
				logger(r, s.log).Warn("admin API locked for a client after failed attempts",
					"client", client.String(), "lock", res.RetryAfter.String())
			}
			s.fail(w, r, errUnauthorized)
		}
	})
}

// retryAfter is d in whole seconds, rounded up, for a Retry-After header.
func retryAfter(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// auditLog answers a queue's audit log, newest first: ?limit= entries
// (default 100, at most audit.MaxEntries).
func (s *Server) auditLog(w http.ResponseWriter, r *http.Request) {
	q, ok := s.knownQueue(w, r)
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
	writeJSON(w, http.StatusOK, struct {
		Queue   string        `json:"queue"`
		Entries []audit.Entry `json:"entries"`
	}{q, entries})
}

// record writes an admin change, already made, to the queue's audit log
// with the client's address. If Redis cannot take it the change stays
// made (it is done; failing the request would only invite a repeat) and
// the entry is logged at error level instead, so it is not lost. Entries
// hold setting values and user ids, never a token.
func (s *Server) record(r *http.Request, q, action, target string, changes []audit.Change) {
	e := s.auditWho(r)
	e.Queue, e.Action, e.Target, e.Changes = q, action, target, changes
	// The change is made: record it even if the client has gone.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), adminRedisTimeout)
	defer cancel()
	if _, err := s.admin.audit.Record(ctx, e); err != nil {
		b, _ := json.Marshal(e)
		logger(r, s.log).Error("audit log not written; the change was made", "err", err, "entry", string(b))
	}
}

// auditWho is who makes the change r asks for, as the audit log records
// it.
func (s *Server) auditWho(r *http.Request) audit.Entry {
	return audit.Entry{ClientIP: s.clientIP.Addr(r).String(), RequestID: middleware.GetReqID(r.Context())}
}

// settingChanges are the audit log's changes of a settings request
// (backoffice.Changes over the admin view).
func settingChanges(requested map[string]json.RawMessage, before adminQueueResponse, after *adminQueueResponse) []audit.Change {
	return backoffice.Changes(requested, before, after)
}

// requestedRefill is PUT .../refill-size as the PATCH field it stands for.
func requestedRefill(n int) map[string]json.RawMessage {
	return map[string]json.RawMessage{"refill_size": audit.Value(n)}
}

// removeUser is the operator taking the user named in the path out of
// the line, or ending their admission; where the user stood goes to the
// audit log.
func (s *Server) removeUser(w http.ResponseWriter, r *http.Request) {
	s.leaveNamed(w, r, func(ctx context.Context, q, user string) error {
		before, err := s.store.Status(ctx, q, user)
		if err != nil {
			return err
		}
		if err := s.store.Remove(ctx, q, user); err != nil {
			return err
		}
		s.recordRemoval(r, q, user, before)
		return nil
	})
}

// recordRemoval audits the operator taking user out: where they stood
// before, and "removed".
func (s *Server) recordRemoval(r *http.Request, q, user string, before queue.Ticket) {
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
