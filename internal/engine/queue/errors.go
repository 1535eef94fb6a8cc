package queue

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The store's errors. The HTTP layer maps each sentinel to a status and a
// stable code (internal/web/httpkit errors.go); compare with errors.Is.

// Inputs the store refuses (validate.go); a setting out of its range is
// a *FieldError (settings.go).
var (
	ErrUnknownQueue     = errors.New("queue: unknown queue")
	ErrInvalidQueueName = errors.New("queue: queue name must be 1-64 of A-Z a-z 0-9 _ -")
	ErrInvalidUserID    = errors.New("queue: user id must be 1-128 bytes of UTF-8 without control characters")
)

// Answers of Extend: the call changed nothing.
var (
	// ErrNotCurrent: the admission named is not its user's current one
	// (it ended, or a newer one began).
	ErrNotCurrent = errors.New("queue: the admission is not current")
	// ErrNoSliding: sessions do not slide (WAITROOM_SESSION_SLIDING), so
	// an admission cannot outlast its pass.
	ErrNoSliding = errors.New("queue: sessions do not slide here")
)

// Refusals of the defences (defences.go): the call changed nothing, and
// may be tried again after the RetryAfter its error carries (errors.As
// with *Retry).
var (
	ErrRateLimited       = errors.New("queue: over the rate limit")
	ErrQueueFull         = errors.New("queue: the line is full")
	ErrChallengeRequired = errors.New("queue: proof of work required")
	// ErrHumanCheckRequired refuses an enter that must pass the queue's
	// human check first (human_check, price.go): the call changed nothing.
	ErrHumanCheckRequired = errors.New("queue: human check required")
	// ErrMoved refuses a place credential issued before its place moved
	// to another device (internal/trust/handoff): the call changed nothing.
	ErrMoved = errors.New("queue: the place moved to another device")
	// ErrPlaceInOtherLine refuses a site account's enter while the
	// account holds a place in another of the queue's lines (the general
	// lane's or a lane's): one account is one person, one place per
	// queue. The call changed nothing; errors.As with *OtherLineError
	// names the line.
	ErrPlaceInOtherLine = errors.New("queue: the account holds a place in another line")
	// ErrSaleClosed refuses an enter while the operator has closed the
	// sale (Store.Close): the call changed nothing.
	ErrSaleClosed = errors.New("queue: the sale is closed")
)

// OtherLineError is ErrPlaceInOtherLine with the lane whose line holds
// the account's place ("": the general lane), so a page can say where.
type OtherLineError struct {
	Lane string
}

func (e *OtherLineError) Error() string {
	return fmt.Sprintf("%v (lane %q)", ErrPlaceInOtherLine, e.Lane)
}
func (e *OtherLineError) Unwrap() error { return ErrPlaceInOtherLine }

// Retry wraps a refusal with how long to wait before trying again.
type Retry struct {
	Err   error
	After time.Duration
}

func (r *Retry) Error() string { return fmt.Sprintf("%v (retry after %s)", r.Err, r.After) }
func (r *Retry) Unwrap() error { return r.Err }

// ChallengeError is ErrChallengeRequired with the proof of work the
// caller's network must bring now (leading zero bits: the queue's
// challenge_difficulty or the price of a place, price.go): a proof
// weaker than that is refused so, and a client solves one as hard.
type ChallengeError struct {
	Difficulty int
}

func (e *ChallengeError) Error() string {
	return fmt.Sprintf("%v (difficulty %d)", ErrChallengeRequired, e.Difficulty)
}
func (e *ChallengeError) Unwrap() error { return ErrChallengeRequired }

// Redis did not do the work in time (batch.go, waitFor).
var (
	// ErrOverloaded is returned when too many calls already wait for Redis.
	ErrOverloaded = errors.New("queue: too many calls waiting for redis")
	// ErrTimeout is returned when Redis did not answer a call in time; the
	// call may still take effect, and a status call tells.
	ErrTimeout = fmt.Errorf("queue: no answer from redis in time: %w", context.DeadlineExceeded)
)

// errWaitClient refuses a replica WAIT on a client that cannot pipeline
// to one node (WithReplicaWait).
var errWaitClient = errors.New("queue: replica WAIT needs a *redis.Client or a *redis.ClusterClient")
