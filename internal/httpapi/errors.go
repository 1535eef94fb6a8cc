package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/pass"
	"github.com/waitroom/waitroom/internal/place"
	"github.com/waitroom/waitroom/internal/queue"
)

// apiError is an error with the status and stable code a client sees.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

var (
	errNotFound         = &apiError{http.StatusNotFound, "not_found", "no such resource"}
	errMethodNotAllowed = &apiError{http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed"}
	errInvalidJSON      = &apiError{http.StatusBadRequest, "invalid_json", "request body must be one JSON object with the documented fields"}
	errBodyTooLarge     = &apiError{http.StatusRequestEntityTooLarge, "body_too_large", "request body is too large"}
	errUnauthorized     = &apiError{http.StatusUnauthorized, "unauthorized", "missing or wrong admin token"}
	errAdminDisabled    = &apiError{http.StatusForbidden, "admin_disabled", "the admin API is disabled: set WAITROOM_ADMIN_TOKEN to enable it"}
	errUnavailable      = &apiError{http.StatusServiceUnavailable, "unavailable", "the waiting room cannot reach its store; try again shortly"}
	errInternal         = &apiError{http.StatusInternalServerError, "internal", "internal error"}

	errUserIDsDisabled  = &apiError{http.StatusBadRequest, "user_ids_disabled", "plain user ids are disabled: enter without one and keep the place_token (or cookie) you get"}
	errInvalidPlace     = &apiError{http.StatusUnauthorized, "invalid_place", "missing or invalid place credential for this queue"}
	errInvalidJoinToken = &apiError{http.StatusBadRequest, "invalid_join_token", "the join token is invalid, expired, for another queue, or join tokens are not enabled"}
	errInvalidPass      = &apiError{http.StatusUnauthorized, "invalid_pass", "missing, invalid, expired or revoked entry pass"}
	errInvalidReturn    = &apiError{http.StatusBadRequest, "invalid_return", "return must be a path on this site"}
	errTwoIdentities    = &apiError{http.StatusBadRequest, "invalid_json", "give user_id or join_token, not both"}
)

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// fail is the one place that turns an error into an HTTP answer. Redis
// errors are logged, never shown to clients.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	e := classify(err)
	if e.status >= 500 {
		logger(r, s.log).Error("request failed", "status", e.status, "err", err)
	}
	if e.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	switch e {
	case errUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="waitroom-admin"`)
	case errInvalidPlace, errInvalidPass:
		w.Header().Set("WWW-Authenticate", `Bearer realm="waitroom", error="invalid_token"`)
	}
	writeJSON(w, e.status, errorBody{errorDetail{e.code, e.message}})
}

func classify(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, queue.ErrUnknownQueue):
		return &apiError{http.StatusNotFound, "queue_not_found", "no such queue"}
	case errors.Is(err, queue.ErrInvalidUserID):
		return &apiError{http.StatusBadRequest, "invalid_user_id", "user_id must be 1-128 bytes of UTF-8 without control characters"}
	case errors.Is(err, place.ErrInvalidJoin):
		return errInvalidJoinToken
	case errors.Is(err, pass.ErrInvalid):
		return errInvalidPass
	case errors.Is(err, queue.ErrInvalidRefill):
		return &apiError{http.StatusBadRequest, "invalid_refill_size", fmt.Sprintf("refill_size must be an integer from 1 to %d", queue.MaxRefillSize)}
	case storeUnavailable(err):
		return errUnavailable
	default:
		return errInternal
	}
}

// storeUnavailable reports whether err means Redis could not do the work
// right now (down, slow, loading, failing over) rather than a bug.
func storeUnavailable(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		// Not a reply from Redis: a dial, network, pool or deadline error.
		return true
	}
	for _, p := range []string{"LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "READONLY", "OOM", "NOREPLICAS"} {
		if strings.HasPrefix(reply.Error(), p) {
			return true
		}
	}
	return false
}
