package client

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Error is a refusal the service answered: its HTTP status and the API's
// stable code (docs/API.md, "Error codes"), with what a caller needs to
// act on it. Compare with errors.Is against the Err values below, which
// match by code; read the details with errors.As.
type Error struct {
	// StatusCode is the HTTP status (403, 429, 503, ...).
	StatusCode int
	// Code is the API's stable code ("place_moved"); "" when the answer
	// named none (a proxy's own error page, say).
	Code    string
	Message string
	// Field is the request field at fault, where there is one.
	Field string
	// RetryAfter is when to try again (Retry-After, or the body's
	// retry_at), for rate_limited, queue_full and unavailable; 0: not said.
	RetryAfter time.Duration
	// Difficulty is the proof of work asked (challenge_required), -1 when
	// not said.
	Difficulty int
	// Provider, SiteKey and ScriptURL name the human check's widget to
	// show (human_check_required, human_check_failed): show it, then
	// enter again with its token as EnterOptions.HumanToken.
	Provider, SiteKey, ScriptURL string
	// OpensAt and PrequeueFrom are a scheduled opening's times (not_open):
	// enter again from PrequeueFrom.
	OpensAt, PrequeueFrom time.Time
	// Lane names the line that holds the account's place
	// (place_in_other_line; "" for the general line).
	Lane string
}

func (e *Error) Error() string {
	code := e.Code
	if code == "" {
		code = http.StatusText(e.StatusCode)
	}
	if e.Message == "" {
		return fmt.Sprintf("waitroom: %d %s", e.StatusCode, code)
	}
	return fmt.Sprintf("waitroom: %d %s: %s", e.StatusCode, code, e.Message)
}

// Is matches an Err value of this package by its code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code != "" && t.Code == e.Code
}

// The API's codes a client of the queue API meets, for errors.Is. They
// match an *Error by Code alone; do not change them.
var (
	// Enter: the queue asks for proof of work. Client.Enter pays it
	// itself; this comes back only when the work asked is above
	// Options.MaxDifficulty (wrapped in ErrTooHard) or a solution was
	// refused three times running.
	ErrChallengeRequired = &Error{Code: "challenge_required"}
	// Enter or challenge: the queue asks for a human check. Show the
	// widget the *Error names, then enter with its token.
	ErrHumanCheckRequired = &Error{Code: "human_check_required"}
	// The provider refused the human check's token: show the widget again.
	ErrHumanCheckFailed = &Error{Code: "human_check_failed"}
	// Before a scheduled opening's pre-queue window (OpensAt, PrequeueFrom).
	ErrNotOpen = &Error{Code: "not_open"}
	// The line is at its cap; try again after RetryAfter.
	ErrQueueFull = &Error{Code: "queue_full"}
	// Too many calls from this address or for this place.
	ErrRateLimited = &Error{Code: "rate_limited"}
	// The service cannot reach its store right now.
	ErrUnavailable = &Error{Code: "unavailable"}
	// No such queue.
	ErrQueueNotFound = &Error{Code: "queue_not_found"}
	// The place credential is missing, invalid or for another queue:
	// the client has forgotten it, and the next Enter makes a new place.
	ErrInvalidPlace = &Error{Code: "invalid_place"}
	// The place moved to another device: this credential is spent, and
	// the client has forgotten it.
	ErrPlaceMoved = &Error{Code: "place_moved"}
	// A hand-over token or code that is unknown, used, expired or for
	// another queue.
	ErrInvalidHandoff = &Error{Code: "invalid_handoff"}
	// A hand-over asked for a place that is not waiting in line.
	ErrNotWaiting = &Error{Code: "not_waiting"}
	// A join token for an account that holds a place in another line of
	// the queue (Lane).
	ErrPlaceInOtherLine = &Error{Code: "place_in_other_line"}
	// A join token the service refused.
	ErrInvalidJoinToken = &Error{Code: "invalid_join_token"}
	// A missing, invalid, expired or revoked entry pass (done).
	ErrInvalidPass = &Error{Code: "invalid_pass"}
	// A call from a page of another site (a client never sends Origin,
	// so only a proxy that adds one meets it).
	ErrCrossSite = &Error{Code: "cross_site_request"}
	// A body the service could not take: a bug of this client or of the
	// service's version.
	ErrInvalidJSON = &Error{Code: "invalid_json"}
)

// The client's own errors, which no answer carries.
var (
	// ErrNoPlace: the call needs a place, and the client holds none
	// (enter first, or Options.Place).
	ErrNoPlace = errors.New("waitroom: no place held: enter first")
	// ErrPlaceEnded: the place is no longer in line (status NOT_WAITING;
	// the ticket's Reason says why when known). Enter again for a new one.
	ErrPlaceEnded = errors.New("waitroom: the place has ended")
	// ErrTooHard wraps ErrChallengeRequired when the proof of work asked
	// is above Options.MaxDifficulty: paying it would take too long.
	ErrTooHard = errors.New("waitroom: the proof of work asked is above MaxDifficulty")
	// ErrBadAnswer is an answer the client cannot read: not the API's
	// JSON, too large, or a ticket that makes no sense. A broken proxy or
	// service; never retried as such.
	ErrBadAnswer = errors.New("waitroom: unreadable answer")
)

// wireError is an error answer's body.
type wireError struct {
	Error struct {
		Code         string  `json:"code"`
		Message      string  `json:"message"`
		Field        string  `json:"field"`
		OpensAt      string  `json:"opens_at"`
		PrequeueFrom string  `json:"prequeue_from"`
		RetryAt      string  `json:"retry_at"`
		Difficulty   *int    `json:"difficulty"`
		Provider     string  `json:"provider"`
		SiteKey      string  `json:"sitekey"`
		ScriptURL    string  `json:"script_url"`
		Lane         *string `json:"lane"`
	} `json:"error"`
}

// retryable reports whether a failed call may be sent again as it was:
// the service or a proxy before it was busy or away, or the network
// failed. Every other refusal would be answered the same way again.
func retryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		switch e.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	var n *netError
	return errors.As(err, &n)
}

// netError is a call that got no answer (the network, a timeout).
type netError struct{ err error }

func (e *netError) Error() string { return "waitroom: " + e.err.Error() }
func (e *netError) Unwrap() error { return e.err }
