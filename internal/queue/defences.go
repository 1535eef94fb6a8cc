package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The defences of enter and status run inside enter.lua and status.lua,
// before anything else, so they cost no round trip of their own: the rate
// limits per client address and per place (shared by every replica, as
// their buckets live in Redis), the line's cap (max_waiting) and the proof
// of work a queue may ask for before entering. A call they refuse changes
// nothing for its user.

// Caller is one enter or status call, with what the defences check.
type Caller struct {
	User string
	// Client is the caller's address (clientip): its rate limit applies;
	// empty, none does (the service's own checks, tests).
	Client string
	// Proved says the caller proved the place (a credential or, in load
	// tests, a plain id): the per-place limit applies.
	Proved bool
	// Proof is the proof of work an enter brings (zero: none).
	Proof Proof

	// clientCost and placeCost are what the script charges the shared
	// buckets (0: not asked), set by the store's local stage (local.go).
	clientCost, placeCost int
}

// Proof is a solved, checked proof-of-work challenge (package challenge
// checks the solution; the store only makes it single-use).
type Proof struct {
	ID         string    // the challenge's unique id
	Difficulty int       // the leading zero bits the solution has
	Expires    time.Time // when the challenge stops being accepted
}

// Limit is a rate limit: Rate calls a second on average, Burst at once. A
// zero Rate is no limit.
type Limit struct {
	Rate  float64
	Burst int
}

// Limits are a replica's rate limits, the same on every queue.
type Limits struct {
	EnterPerClient, EnterPerPlace   Limit
	StatusPerClient, StatusPerPlace Limit
}

// Validate checks that every limit is off or sane.
func (l Limits) Validate() error {
	for name, v := range map[string]Limit{
		"enter per client": l.EnterPerClient, "enter per place": l.EnterPerPlace,
		"status per client": l.StatusPerClient, "status per place": l.StatusPerPlace,
	} {
		if v.Rate < 0 || math.IsNaN(v.Rate) || math.IsInf(v.Rate, 0) || (v.Rate > 0 && (v.Burst < 1 || v.Burst > 1_000_000)) {
			return fmt.Errorf("queue: rate limit %s: rate %v, burst %d: want a rate ≥ 0 and, with a rate, a burst of 1…1000000", name, v.Rate, v.Burst)
		}
	}
	return nil
}

// args are the scripts' limit parameters (ARGV after the defaults): the
// time one call earns back, in ms (0: no limit), and the burst, per client
// and per place.
func (l Limit) args() []any {
	if l.Rate == 0 {
		return []any{"0", "1"}
	}
	return []any{strconv.FormatFloat(1000/l.Rate, 'g', -1, 64), strconv.Itoa(l.Burst)}
}

// Refusals: the call changed nothing, and may be tried again after the
// RetryAfter its error carries (errors.As with *Retry).
var (
	ErrRateLimited       = errors.New("queue: over the rate limit")
	ErrQueueFull         = errors.New("queue: the line is full")
	ErrChallengeRequired = errors.New("queue: proof of work required")
)

// Retry wraps a refusal with how long to wait before trying again.
type Retry struct {
	Err   error
	After time.Duration
}

func (r *Retry) Error() string { return fmt.Sprintf("%v (retry after %s)", r.Err, r.After) }
func (r *Retry) Unwrap() error { return r.Err }

// MaxChallengeDifficulty bounds the proof of work a queue asks for: 32
// leading zero bits is hours of a browser's time already.
const MaxChallengeDifficulty = 32

// MaxMaxWaiting bounds the line's cap (0: no cap).
const MaxMaxWaiting = 100_000_000

var (
	ErrInvalidMaxWaiting = fmt.Errorf("queue: max_waiting must be 0 (no cap) to %d", MaxMaxWaiting)
	ErrInvalidDifficulty = fmt.Errorf("queue: challenge_difficulty must be 0 (off) to %d", MaxChallengeDifficulty)
)

func checkMaxWaiting(n int) error {
	if n < 0 || n > MaxMaxWaiting {
		return ErrInvalidMaxWaiting
	}
	return nil
}

func checkDifficulty(n int) error {
	if n < 0 || n > MaxChallengeDifficulty {
		return ErrInvalidDifficulty
	}
	return nil
}

// The status codes of a refused call (common.lua) and the error each is.
func refusal(status, wait int64) error {
	var err error
	switch status {
	case 5:
		err = ErrRateLimited
	case 6:
		err = ErrQueueFull
	case 7:
		return ErrChallengeRequired
	default:
		return nil
	}
	return &Retry{Err: err, After: time.Duration(wait) * time.Millisecond}
}

// ChallengeDifficulty is the proof of work queue asks for before entering
// (0: none): one read, for the challenge endpoint.
func (s *Store) ChallengeDifficulty(ctx context.Context, queue string) (int, error) {
	q, err := s.queue(queue)
	if err != nil {
		return 0, err
	}
	v, err := waitFor(ctx, s.timeout, func(ctx context.Context) (string, error) {
		return s.rdb.HGet(ctx, q.keys.config, "challenge_difficulty").Result()
	})
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("queue: challenge difficulty: %w", err)
	}
	return strconv.Atoi(v)
}
