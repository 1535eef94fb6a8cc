// Package httpkit is the HTTP plumbing the public API and the admin API
// share: strict JSON in and out with a body limit, the one error type and
// the one function that turns errors into answers (status, stable code,
// the 5xx logged), request ids, the access log and its response writer,
// and the common middleware.
package httpkit

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/loglimit"
	"github.com/waitroom/waitroom/internal/ops/autorate"
	"github.com/waitroom/waitroom/internal/ops/forecast"
	"github.com/waitroom/waitroom/internal/trust/challenge"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/trust/invite"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/admission"
)

// Error is an error with the status and stable code a client sees. A
// handler returns one of its own (its side's refusals) or one of the
// errors below; Classify maps every other error to one.
type Error struct {
	Status  int
	Code    string
	Message string
	Field   string // the request field at fault, where there is one
	// A scheduled opening's times (not_open), RFC 3339.
	OpensAt, PrequeueFrom string
	// ReopensAt: with sale_closed, when sales reopen as the operator
	// said (RFC 3339; "": not said). Its Message is the operator's.
	ReopensAt string
	// RetryAfter, when set, is when to try again (Retry-After, and
	// retry_at in the body).
	RetryAfter time.Duration
	// Difficulty is the proof of work the caller's network must bring
	// now (challenge_required from the store; nil: not known).
	Difficulty *int
	// Lane names the line that holds the account's place
	// (place_in_other_line; "": the general lane, nil: not this error).
	Lane *string
	// Authenticate is the WWW-Authenticate header sent with it ("": none).
	Authenticate string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// The errors more than one handler answers, and those Classify maps the
// engine's and the capabilities' errors to.
var (
	ErrNotFound         = &Error{Status: http.StatusNotFound, Code: "not_found", Message: "no such resource"}
	ErrMethodNotAllowed = &Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed", Message: "method not allowed"}
	ErrInvalidJSON      = &Error{Status: http.StatusBadRequest, Code: "invalid_json", Message: "request body must be one JSON object with the documented fields"}
	ErrBodyTooLarge     = &Error{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large", Message: "request body is too large"}
	ErrUnavailable      = &Error{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "the waiting room cannot reach its store; try again shortly"}
	// ErrSaleClosed: the operator closed the sale; the public API
	// answers it with the operator's message instead (SaleClosed).
	ErrSaleClosed = &Error{Status: http.StatusGone, Code: "sale_closed", Message: "the sale is closed"}
	ErrInternal   = &Error{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error"}
	// ErrDrawSealed: a change of the opening that would need a new seed
	// for a draw whose seed is bound (docs/DRAW.md); nothing changed.
	ErrDrawSealed = &Error{Status: http.StatusConflict, Code: "draw_sealed", Field: "prequeue_from",
		Message: "the draw is sealed: its pre-queue has opened and its participants hold keys made with its seed; the opening can be moved or cleared (the seed is kept), but the pre-queue cannot close again, nor a new opening be set while the last draw is being placed"}
	// ErrNoDraw: GET .../draw before any draw of the queue was made.
	ErrNoDraw = &Error{Status: http.StatusNotFound, Code: "no_draw", Message: "this queue has made no draw yet; a sealed draw's commitment is in the line document"}

	ErrUserIDsDisabled  = &Error{Status: http.StatusBadRequest, Code: "user_ids_disabled", Message: "plain user ids are disabled: enter without one and keep the place_token (or cookie) you get"}
	ErrInvalidPlace     = &Error{Status: http.StatusUnauthorized, Code: "invalid_place", Message: "missing or invalid place credential for this queue", Authenticate: invalidToken}
	ErrInvalidJoinToken = &Error{Status: http.StatusBadRequest, Code: "invalid_join_token", Message: "the join token is invalid, expired, for another queue, or join tokens are not enabled"}
	ErrInvalidPass      = &Error{Status: http.StatusUnauthorized, Code: "invalid_pass", Message: "missing, invalid, expired or revoked entry pass", Authenticate: invalidToken}
	ErrTwoIdentities    = &Error{Status: http.StatusBadRequest, Code: "invalid_json", Message: "give user_id or join_token, not both"}

	ErrChallengeRequired = &Error{Status: http.StatusForbidden, Code: queue.RefusedChallenge, Message: "this queue asks for proof of work: get /challenge, solve it and send challenge and nonce with enter"}
	ErrHumanRequired     = &Error{Status: http.StatusForbidden, Code: "human_check_required", Message: "this queue asks for a human check: show the provider's widget (provider, sitekey, script_url) and send its token with enter as human_token"}
	ErrHumanFailed       = &Error{Status: http.StatusForbidden, Code: "human_check_failed", Message: "the human check was not passed (refused, expired or used already): show the provider's widget again"}

	ErrInvalidHandoff = &Error{Status: http.StatusBadRequest, Code: "invalid_handoff", Field: "handoff",
		Message: "the hand-over is unknown, used, expired or for another queue; ask the other device for a new one"}
	ErrPlaceMoved = &Error{Status: http.StatusUnauthorized, Code: "place_moved",
		Message: "this place moved to another device; this credential no longer holds it", Authenticate: invalidToken}
	ErrHandoffNotWaiting = &Error{Status: http.StatusConflict, Code: "not_waiting",
		Message: "only a place waiting in line can move to another device"}

	// ErrInvalidCode is every refused invitation code alike: unknown,
	// spent, expired or revoked, so a guesser learns nothing from it.
	ErrInvalidCode = &Error{Status: http.StatusForbidden, Code: "invalid_code", Field: "invite_code",
		Message: "this invitation code is not valid: check it, or ask for a new one"}
	ErrCodeExists = &Error{Status: http.StatusConflict, Code: "code_exists",
		Message: "a code of this batch exists already in this queue; nothing was stored"}
	ErrTooManyCodes = &Error{Status: http.StatusConflict, Code: "too_many_codes",
		Message: "this queue holds as many codes as it may (1,000,000): revoke a batch first"}
	ErrBatchNotFound = &Error{Status: http.StatusNotFound, Code: "batch_not_found", Message: "no such batch of codes"}
)

// invalidToken is the WWW-Authenticate of a refused place credential or
// entry pass.
const invalidToken = `Bearer realm="waitroom", error="invalid_token"`

// ErrorBody is every error's answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is an error as a client reads it: the stable code, and
// what it needs to act on it.
type ErrorDetail struct {
	Code         string `json:"code"`
	Message      string `json:"message"`
	Field        string `json:"field,omitempty"`
	OpensAt      string `json:"opens_at,omitempty"`
	PrequeueFrom string `json:"prequeue_from,omitempty"`
	ReopensAt    string `json:"reopens_at,omitempty"` // sale_closed: when sales reopen, if the operator said
	RetryAt      string `json:"retry_at,omitempty"`   // when a rate-limited or full-line call may be tried again
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

// Responder turns errors into answers for both sides of the service, and
// logs what they cannot answer: one per service, so a failure's log line
// is limited over every route.
type Responder struct {
	log      *slog.Logger
	human    *humancheck.Checker // nil: none
	failures *loglimit.Keyed     // the 5xx lines, one per cause and route a period
}

// NewResponder returns the responder that logs to log; human (nil: none)
// is the human check whose widget the errors that ask for one name.
func NewResponder(log *slog.Logger, human *humancheck.Checker) *Responder {
	return &Responder{log: log, human: human, failures: loglimit.NewKeyed(failureLogEvery, maxFailureKeys, nil)}
}

// Fail is the one place that turns an error into an HTTP answer. Redis
// errors are logged, never shown to clients.
func (s *Responder) Fail(w http.ResponseWriter, r *http.Request, err error) {
	e := Classify(err)
	// A full line is a refusal the operator chose, met by every newcomer
	// while it lasts: not an error to log line by line.
	if e.Status >= 500 && e.Code != queue.RefusedQueueFull {
		s.LogFailure(r, e, err)
	}
	retryAt := ""
	switch {
	case e.RetryAfter > 0:
		w.Header().Set("Retry-After", RetryAfter(e.RetryAfter))
		retryAt = time.Now().Add(e.RetryAfter).UTC().Format(time.RFC3339)
	case e.Status == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	if e.Authenticate != "" {
		w.Header().Set("WWW-Authenticate", e.Authenticate)
	}
	d := ErrorDetail{Code: e.Code, Message: e.Message, Field: e.Field, OpensAt: e.OpensAt, PrequeueFrom: e.PrequeueFrom, ReopensAt: e.ReopensAt, RetryAt: retryAt, Difficulty: e.Difficulty, Lane: e.Lane}
	if (e == ErrHumanRequired || e == ErrHumanFailed) && s.human != nil {
		p := s.human.Public()
		d.Provider, d.SiteKey, d.ScriptURL = p.Provider, p.SiteKey, p.ScriptURL
	}
	WriteJSON(w, e.Status, ErrorBody{d})
}

// Logger returns the responder's logger with r's request id added, for
// messages about one request. It is built only when something is logged.
func (s *Responder) Logger(r *http.Request) *slog.Logger {
	return logger(r, s.log)
}

// failureLogEvery is how often a failure of one cause on one route is
// logged: while the store is away every request fails alike, and a line
// each (151 in 80 s from a dozen polling pages) hides what else happens.
const failureLogEvery = 10 * time.Second

// maxFailureKeys bounds the (cause, method, route) kept: codes and route
// patterns are few, but a method outside the routes is the client's.
const maxFailureKeys = 1024

// LogFailure writes a 5xx's ERROR line: the first of its cause (the
// stable code), method and route pattern in each failureLogEvery, with
// how many there were since the last line of the three (count) and the
// error of this one.
func (s *Responder) LogFailure(r *http.Request, e *Error, err error) {
	route := "(unrouted)"
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		route = rc.RoutePattern()
	}
	method := loglimit.Cut(r.Method, 16)
	n, ok := s.failures.Take(e.Code + " " + method + " " + route)
	if !ok {
		return
	}
	s.Logger(r).Error("request failed", "status", e.Status, "code", e.Code, "method", method, "route", route,
		"count", n, "err", err)
}

// Classify is the answer to err: the status and stable code a client
// sees.
func Classify(err error) *Error {
	var ae *Error
	var ce *queue.ChallengeError
	var fe *queue.FieldError
	var le *forecast.LimitError
	var oe *queue.OtherLineError
	var lk *invite.LockedError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, queue.ErrInvalidCode):
		return ErrInvalidCode
	case errors.As(err, &lk):
		return &Error{Status: http.StatusTooManyRequests, Code: "too_many_code_attempts", Field: "invite_code",
			Message: "too many wrong invitation codes from this address or network; try again after Retry-After seconds", RetryAfter: lk.RetryAfter}
	case errors.Is(err, queue.ErrInvalidCodeBatch):
		return &Error{Status: http.StatusBadRequest, Code: "invalid_codes", Message: ClientMessage(err)}
	case errors.Is(err, invite.ErrShape):
		return &Error{Status: http.StatusBadRequest, Code: "invalid_codes", Field: "codes", Message: "a code is 8 to 64 letters and digits (spaces and hyphens aside)"}
	case errors.Is(err, queue.ErrCodeExists):
		return ErrCodeExists
	case errors.Is(err, queue.ErrTooManyCodes):
		return ErrTooManyCodes
	case errors.Is(err, queue.ErrBatchNotFound):
		return ErrBatchNotFound
	case errors.Is(err, admission.ErrInvalidPlace):
		return ErrInvalidPlace
	case errors.Is(err, admission.ErrTwoIdentities):
		return ErrTwoIdentities
	case errors.Is(err, admission.ErrUserIDsDisabled):
		return ErrUserIDsDisabled
	case errors.Is(err, queue.ErrInvalidLanes):
		return &Error{Status: http.StatusBadRequest, Code: "invalid_lanes", Message: ClientMessage(err), Field: "lanes"}
	case errors.Is(err, queue.ErrUnknownLane):
		return &Error{Status: http.StatusBadRequest, Code: "invalid_lane", Message: "the join token names a lane this queue does not have"}
	case errors.As(err, &fe):
		// A setting refused, by the parser or the store: named.
		return &Error{Status: http.StatusBadRequest, Code: "invalid_settings", Message: ClientMessage(err), Field: fe.Field}
	case errors.As(err, &ce):
		// A proof too weak for what the caller's network must pay now:
		// the page solves one as hard (a new challenge is issued at it).
		e := *ErrChallengeRequired
		e.Difficulty = &ce.Difficulty
		return &e
	case errors.As(err, &le):
		return &Error{Status: http.StatusTooManyRequests, Code: queue.RefusedRateLimited, Message: "too many forecasts for this credential; try again after Retry-After seconds",
			RetryAfter: le.After}
	case errors.As(err, &oe):
		// One account, one place per queue: the page names the line
		// that holds it rather than making a second.
		return &Error{Status: http.StatusConflict, Code: "place_in_other_line",
			Message: "this account already holds a place in another line of this queue (lane: \"\" is the general line)", Lane: &oe.Lane}
	case errors.Is(err, queue.ErrRateLimited):
		return &Error{Status: http.StatusTooManyRequests, Code: queue.RefusedRateLimited, Message: "too many requests from this address or for this place; try again after Retry-After seconds",
			RetryAfter: storeWait(err)}
	case errors.Is(err, queue.ErrSaleClosed):
		return ErrSaleClosed
	case errors.Is(err, queue.ErrDrawSealed):
		return ErrDrawSealed
	case errors.Is(err, queue.ErrQueueFull):
		return &Error{Status: http.StatusServiceUnavailable, Code: queue.RefusedQueueFull, Message: "the line is full; try again at retry_at",
			RetryAfter: storeWait(err)}
	case errors.Is(err, queue.ErrChallengeRequired), errors.Is(err, challenge.ErrInvalid):
		return ErrChallengeRequired
	case errors.Is(err, queue.ErrHumanCheckRequired):
		return ErrHumanRequired
	case errors.Is(err, humancheck.ErrFailed):
		return ErrHumanFailed
	case errors.Is(err, queue.ErrMoved):
		return ErrPlaceMoved
	case errors.Is(err, handoff.ErrInvalid):
		return ErrInvalidHandoff
	case errors.Is(err, handoff.ErrNotWaiting):
		return ErrHandoffNotWaiting
	case errors.Is(err, queue.ErrUnknownQueue):
		return &Error{Status: http.StatusNotFound, Code: "queue_not_found", Message: "no such queue"}
	case errors.Is(err, queue.ErrInvalidUserID):
		return &Error{Status: http.StatusBadRequest, Code: "invalid_user_id", Message: "user_id must be 1-128 bytes of UTF-8 without control characters"}
	case errors.Is(err, place.ErrInvalidJoin):
		return ErrInvalidJoinToken
	case errors.Is(err, pass.ErrInvalid):
		return ErrInvalidPass
	case errors.Is(err, autorate.ErrInvalidReport):
		return &Error{Status: http.StatusBadRequest, Code: "invalid_origin_report", Message: ClientMessage(err)}
	case storeUnavailable(err):
		return ErrUnavailable
	default:
		return ErrInternal
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

// ClientMessage is a store validation error as a client reads it, without
// the Go package's prefix.
func ClientMessage(err error) string {
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

// RetryAfter is d in whole seconds, rounded up, for a Retry-After header.
func RetryAfter(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// SaleClosed is the answer to an enter while the sale is closed: 410
// sale_closed with the operator's message in lang (queue.Closing.In) and
// when sales reopen, if said.
func SaleClosed(c queue.Closing, lang string) *Error {
	e := *ErrSaleClosed
	if m := c.In(lang); m != "" {
		e.Message = m
	}
	e.ReopensAt = RFC3339(c.ReopensAt)
	return &e
}
