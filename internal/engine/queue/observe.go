package queue

import (
	"errors"
	"time"
)

// Observer hears what the store did, for metrics (internal/ops/metrics), so
// that this package knows nothing of Prometheus. Its methods run on the
// request path: they must be quick, safe for concurrent use and never
// block. The queue is always one of the store's declared queues.
type Observer interface {
	// DirectAdmission counts an enter admitted at once, on the bucket's
	// tokens (an admission by the tick is in Tick's result instead).
	DirectAdmission(queue string)
	// Refused counts an enter, status or challenge call (op) that the
	// defences refused; reason is the refusal's stable code:
	// RefusedRateLimited, RefusedQueueFull or RefusedChallenge (a
	// challenge call is only ever rate limited).
	Refused(queue, op, reason string)
	// Batch reports the calls one enter or status script call carried
	// (group commit, batch.go).
	Batch(queue, op string, size int)
	// AdmissionEnded reports an admission the order page said was done
	// (Store.Done) and how long it lasted, from its start (Redis clock).
	// Expired admissions are in Tick's result instead (TickResult.Samples).
	AdmissionEnded(queue string, inside time.Duration)
}

// The ops and refusal reasons an Observer hears. The reasons are also the
// API's error codes for the same refusals (internal/web/httpkit errors.go), so
// metrics and answers cannot drift apart.
const (
	OpEnter     = "enter"
	OpStatus    = "status"
	OpChallenge = "challenge" // fetching a proof-of-work challenge (Store.Challenge)

	RefusedRateLimited = "rate_limited"
	RefusedQueueFull   = "queue_full"
	RefusedChallenge   = "challenge_required"
)

// observe reports how an enter, status or challenge call (op) ended.
func (s *Store) observe(queue, op string, t Ticket, err error) {
	switch {
	case err == nil:
		if op == OpEnter && t.Status == Entered {
			s.observer.DirectAdmission(queue)
		}
	case errors.Is(err, ErrRateLimited):
		s.observer.Refused(queue, op, RefusedRateLimited)
	case errors.Is(err, ErrQueueFull):
		s.observer.Refused(queue, op, RefusedQueueFull)
	case errors.Is(err, ErrChallengeRequired):
		s.observer.Refused(queue, op, RefusedChallenge)
	}
}

// nopObserver is the observer of a store built without one (WithObserver).
type nopObserver struct{}

func (nopObserver) DirectAdmission(string)               {}
func (nopObserver) Refused(string, string, string)       {}
func (nopObserver) Batch(string, string, int)            {}
func (nopObserver) AdmissionEnded(string, time.Duration) {}
