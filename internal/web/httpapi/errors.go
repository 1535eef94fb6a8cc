package httpapi

import (
	"errors"
	"github.com/waitroom/waitroom/internal/ops/autorate"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/loglimit"
	"github.com/waitroom/waitroom/internal/ops/forecast"
	"github.com/waitroom/waitroom/internal/trust/challenge"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/admission"
)

// apiError is an error with the status and stable code a client sees.
type apiError struct {
	status  int
	code    string
	message string
	field   string // the request field at fault, where there is one
	// A scheduled opening's times (not_open), RFC 3339.
	opensAt, prequeueFrom string
	// retryAfter, when set, is when to try again (Retry-After, and
	// retry_at in the body).
	retryAfter time.Duration
	// difficulty is the proof of work the caller's network must bring
	// now (challenge_required from the store; nil: not known).
	difficulty *int
	// lane names the line that holds the account's place
	// (place_in_other_line; "": the general lane, nil: not this error).
	lane *string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

var (
	errNotFound         = &apiError{status: http.StatusNotFound, code: "not_found", message: "no such resource"}
	errMethodNotAllowed = &apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed", message: "method not allowed"}
	errInvalidJSON      = &apiError{status: http.StatusBadRequest, code: "invalid_json", message: "request body must be one JSON object with the documented fields"}
	errBodyTooLarge     = &apiError{status: http.StatusRequestEntityTooLarge, code: "body_too_large", message: "request body is too large"}
	errUnauthorized     = &apiError{status: http.StatusUnauthorized, code: "unauthorized", message: "missing or wrong credential: an API token, the admin token, or a back office session"}
	errAdminDisabled    = &apiError{status: http.StatusForbidden, code: "admin_disabled", message: "the admin API is disabled: set WAITROOM_ADMIN_TOKEN or WAITROOM_OIDC_ISSUER to enable it"}
	errUnavailable      = &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "the waiting room cannot reach its store; try again shortly"}
	errInternal         = &apiError{status: http.StatusInternalServerError, code: "internal", message: "internal error"}

	errUserIDsDisabled  = &apiError{status: http.StatusBadRequest, code: "user_ids_disabled", message: "plain user ids are disabled: enter without one and keep the place_token (or cookie) you get"}
	errInvalidPlace     = &apiError{status: http.StatusUnauthorized, code: "invalid_place", message: "missing or invalid place credential for this queue"}
	errInvalidJoinToken = &apiError{status: http.StatusBadRequest, code: "invalid_join_token", message: "the join token is invalid, expired, for another queue, or join tokens are not enabled"}
	errInvalidPass      = &apiError{status: http.StatusUnauthorized, code: "invalid_pass", message: "missing, invalid, expired or revoked entry pass"}
	errQueueRequired    = &apiError{status: http.StatusBadRequest, code: "queue_required", message: "name the queue the pass must be for: ?queue=", field: "queue"}
	errInvalidReturn    = &apiError{status: http.StatusBadRequest, code: "invalid_return", message: "return must be a path on this site"}
	errTwoIdentities    = &apiError{status: http.StatusBadRequest, code: "invalid_json", message: "give user_id or join_token, not both"}

	errCrossSite         = &apiError{status: http.StatusForbidden, code: "cross_site_request", message: "this request must come from the waiting room's own page or an allowed origin"}
	errNotJSON           = &apiError{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type", message: "send the body as Content-Type: application/json"}
	errChallengeRequired = &apiError{status: http.StatusForbidden, code: queue.RefusedChallenge, message: "this queue asks for proof of work: get /challenge, solve it and send challenge and nonce with enter"}
	errHumanRequired     = &apiError{status: http.StatusForbidden, code: "human_check_required", message: "this queue asks for a human check: show the provider's widget (provider, sitekey, script_url) and send its token with enter as human_token"}
	errHumanFailed       = &apiError{status: http.StatusForbidden, code: "human_check_failed", message: "the human check was not passed (refused, expired or used already): show the provider's widget again"}
)

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code         string `json:"code"`
	Message      string `json:"message"`
	Field        string `json:"field,omitempty"`
	OpensAt      string `json:"opens_at,omitempty"`
	PrequeueFrom string `json:"prequeue_from,omitempty"`
	RetryAt      string `json:"retry_at,omitempty"` // when a rate-limited or full-line call may be tried again
	// Difficulty: with challenge_required, the proof of work to solve.
	Difficulty *int `json:"difficulty,omitempty"`
	// Provider, SiteKey and ScriptURL: with human_check_required and
	// human_check_failed, the widget to show (humancheck.Public).
	Provider  string `json:"provider,omitempty"`
	SiteKey   string `json:"sitekey,omitempty"`
	ScriptURL string `json:"script_url,omitempty"`
	// Lane: with place_in_other_line, the lane whose line holds the
	// account's place ("" for the general line), so the page can say so.
	Lane *string `json:"lane,omitempty"`
}

// fail is the one place that turns an error into an HTTP answer. Redis
// errors are logged, never shown to clients.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	e := classify(err)
	// A full line is a refusal the operator chose, met by every newcomer
	// while it lasts: not an error to log line by line.
	if e.status >= 500 && e.code != queue.RefusedQueueFull {
		s.logFailure(r, e, err)
	}
	retryAt := ""
	switch {
	case e.retryAfter > 0:
		w.Header().Set("Retry-After", retryAfter(e.retryAfter))
		retryAt = time.Now().Add(e.retryAfter).UTC().Format(time.RFC3339)
	case e.status == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	switch e {
	case errUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="waitroom-admin"`)
	case errInvalidPlace, errInvalidPass, errPlaceMoved:
		w.Header().Set("WWW-Authenticate", `Bearer realm="waitroom", error="invalid_token"`)
	}
	d := errorDetail{Code: e.code, Message: e.message, Field: e.field, OpensAt: e.opensAt, PrequeueFrom: e.prequeueFrom, RetryAt: retryAt, Difficulty: e.difficulty, Lane: e.lane}
	if (e == errHumanRequired || e == errHumanFailed) && s.human != nil {
		p := s.human.Public()
		d.Provider, d.SiteKey, d.ScriptURL = p.Provider, p.SiteKey, p.ScriptURL
	}
	writeJSON(w, e.status, errorBody{d})
}

// failureLogEvery is how often a failure of one cause on one route is
// logged: while the store is away every request fails alike, and a line
// each (151 in 80 s from a dozen polling pages) hides what else happens.
const failureLogEvery = 10 * time.Second

// maxFailureKeys bounds the (cause, method, route) kept: codes and route
// patterns are few, but a method outside the routes is the client's.
const maxFailureKeys = 1024

// logFailure writes a 5xx's ERROR line: the first of its cause (the
// stable code), method and route pattern in each failureLogEvery, with
// how many there were since the last line of the three (count) and the
// error of this one.
func (s *Server) logFailure(r *http.Request, e *apiError, err error) {
	route := "(unrouted)"
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		route = rc.RoutePattern()
	}
	method := loglimit.Cut(r.Method, 16)
	n, ok := s.failures.Take(e.code + " " + method + " " + route)
	if !ok {
		return
	}
	logger(r, s.log).Error("request failed", "status", e.status, "code", e.code, "method", method, "route", route,
		"count", n, "err", err)
}

func classify(err error) *apiError {
	var ae *apiError
	var ce *queue.ChallengeError
	var fe *queue.FieldError
	var le *forecast.LimitError
	var oe *queue.OtherLineError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, admission.ErrInvalidPlace):
		return errInvalidPlace
	case errors.Is(err, admission.ErrTwoIdentities):
		return errTwoIdentities
	case errors.Is(err, admission.ErrUserIDsDisabled):
		return errUserIDsDisabled
	case errors.Is(err, queue.ErrInvalidLanes):
		return &apiError{status: http.StatusBadRequest, code: "invalid_lanes", message: clientMessage(err), field: "lanes"}
	case errors.Is(err, queue.ErrUnknownLane):
		return &apiError{status: http.StatusBadRequest, code: "invalid_lane", message: "the join token names a lane this queue does not have"}
	case errors.As(err, &fe):
		// A setting refused, by the parser or the store: named.
		return &apiError{status: http.StatusBadRequest, code: "invalid_settings", message: clientMessage(err), field: fe.Field}
	case errors.As(err, &ce):
		// A proof too weak for what the caller's network must pay now:
		// the page solves one as hard (a new challenge is issued at it).
		e := *errChallengeRequired
		e.difficulty = &ce.Difficulty
		return &e
	case errors.As(err, &le):
		return &apiError{status: http.StatusTooManyRequests, code: queue.RefusedRateLimited, message: "too many forecasts for this credential; try again after Retry-After seconds",
			retryAfter: le.After}
	case errors.As(err, &oe):
		// One account, one place per queue: the page names the line
		// that holds it rather than making a second.
		return &apiError{status: http.StatusConflict, code: "place_in_other_line",
			message: "this account already holds a place in another line of this queue (lane: \"\" is the general line)", lane: &oe.Lane}
	case errors.Is(err, queue.ErrRateLimited):
		return &apiError{status: http.StatusTooManyRequests, code: queue.RefusedRateLimited, message: "too many requests from this address or for this place; try again after Retry-After seconds",
			retryAfter: storeWait(err)}
	case errors.Is(err, queue.ErrQueueFull):
		return &apiError{status: http.StatusServiceUnavailable, code: queue.RefusedQueueFull, message: "the line is full; try again at retry_at",
			retryAfter: storeWait(err)}
	case errors.Is(err, queue.ErrChallengeRequired), errors.Is(err, challenge.ErrInvalid):
		return errChallengeRequired
	case errors.Is(err, queue.ErrHumanCheckRequired):
		return errHumanRequired
	case errors.Is(err, humancheck.ErrFailed):
		return errHumanFailed
	case errors.Is(err, queue.ErrMoved):
		return errPlaceMoved
	case errors.Is(err, handoff.ErrInvalid):
		return errInvalidHandoff
	case errors.Is(err, handoff.ErrNotWaiting):
		return errHandoffNotWaiting
	case errors.Is(err, queue.ErrUnknownQueue):
		return &apiError{status: http.StatusNotFound, code: "queue_not_found", message: "no such queue"}
	case errors.Is(err, queue.ErrInvalidUserID):
		return &apiError{status: http.StatusBadRequest, code: "invalid_user_id", message: "user_id must be 1-128 bytes of UTF-8 without control characters"}
	case errors.Is(err, place.ErrInvalidJoin):
		return errInvalidJoinToken
	case errors.Is(err, pass.ErrInvalid):
		return errInvalidPass
	case errors.Is(err, autorate.ErrInvalidReport):
		return &apiError{status: http.StatusBadRequest, code: "invalid_origin_report", message: clientMessage(err)}
	case storeUnavailable(err):
		return errUnavailable
	default:
		return errInternal
	}
}

// storeWait is the wait a refusal from the store carries (queue.Retry).
func storeWait(err error) time.Duration {
	var r *queue.Retry
	if errors.As(err, &r) {
		return r.After
	}
	return time.Second
}

// clientMessage is a store validation error as a client reads it, without
// the Go package's prefix.
func clientMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "queue: ")
}

// storeUnavailable reports whether err means Redis could not do the work
// right now (down, slow, loading, failing over) rather than a bug.
func storeUnavailable(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		// Not a reply from Redis: a dial, network, pool or deadline error.
		return true
	}
	// MOVED and ASK: the cluster client follows no redirect (a script is
	// sent at most once, config.Redis), so a slot that moved fails the call.
	for _, p := range []string{"LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "READONLY", "OOM", "NOREPLICAS", "MOVED", "ASK"} {
		if strings.HasPrefix(reply.Error(), p) {
			return true
		}
	}
	return false
}
