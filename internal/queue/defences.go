package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// The defences of enter and status run inside enter.lua and status.lua,
// before anything else, so they cost no round trip of their own: the rate
// limits per client address and per place (shared by every replica, as
// their buckets live in Redis), the line's cap (max_waiting) and the proof
// of work a queue may ask for before entering. A call they refuse changes
// nothing for its user. Fetching a challenge (Challenge) has a per-client
// rate limit of its own, in challenge.lua.

// args are the scripts' limit parameters (ARGV after the defaults): the
// time one call earns back, in ms (0: no limit), and the burst, per client
// and per place.
func (l Limit) args() []any {
	if l.Rate == 0 {
		return []any{"0", "1"}
	}
	return []any{strconv.FormatFloat(1000/l.Rate, 'g', -1, 64), strconv.Itoa(l.Burst)}
}

// Challenge is the proof of work queue asks for before entering (0:
// none), for the challenge endpoint, behind client's rate limit (empty:
// none, as for Caller.Client). A challenge serves one enter, so a client
// gets them at its enter limit (Limits.EnterPerClient), through the same
// two stages (local.go, then challenge.lua), in buckets of their own (op
// OpChallenge): fetching one spends no enter. Over the limit it is refused
// with ErrRateLimited in a *Retry. One script call, as the read it
// replaced was.
func (s *Store) Challenge(ctx context.Context, queue, client string) (int, error) {
	q, err := s.queue(queue)
	if err != nil {
		return 0, err
	}
	lim := s.defaults.Limits.EnterPerClient
	c := Caller{Client: client}
	if err := s.local.admit(queue, OpChallenge, &c, lim, Limit{}, time.Now()); err != nil {
		s.observe(queue, OpChallenge, Ticket{}, err)
		return 0, err
	}
	keys := []string{q.keys.config, q.clientKey(OpChallenge, c)}
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]int64, error) {
		return challengeScript.Run(ctx, s.rdb, keys, s.enterLimits[0], s.enterLimits[1], c.clientCost).Int64Slice()
	})
	if err != nil {
		return 0, fmt.Errorf("queue: challenge: %w", err)
	}
	// {status, value}: like a call's answer in a batch reply.
	if len(v) != 2 {
		return 0, fmt.Errorf("queue: challenge: unexpected reply %v", v)
	}
	status, value := v[0], v[1] // value: the difficulty, or the wait when refused
	if err := refusal(status, value); err != nil {
		s.local.refused(queue, OpChallenge, c, lim, Limit{})
		s.observe(queue, OpChallenge, Ticket{}, err)
		return 0, err
	}
	return int(value), nil
}
