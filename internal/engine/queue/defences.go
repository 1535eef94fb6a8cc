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

// Challenge is the proof of work c must bring to enter queue now (0:
// none), for the challenge endpoint: the queue's challenge_difficulty,
// or the price of a place on c's networks when that is higher (price.go;
// c.Networks unset: the queue's alone). Only c's Client and Networks
// count, behind their rate limits (empty: none). A challenge serves one
// enter, so a client gets them at its enter limits (Limits.EnterPerClient,
// EnterPerNetwork, EnterPerSite), through the same two stages (local.go,
// then challenge.lua), in buckets of their own (op OpChallenge): fetching
// one spends no enter. Over a limit it is refused with ErrRateLimited in a
// *Retry. One script call.
func (s *Store) Challenge(ctx context.Context, queue string, c Caller) (int, error) {
	q, err := s.queue(queue)
	if err != nil {
		return 0, err
	}
	l := s.defaults.Limits
	lim, nets := l.EnterPerClient, [2]Limit{l.EnterPerNetwork, l.EnterPerSite}
	c = Caller{Client: c.Client, Networks: c.Networks, Pricing: c.Pricing, Human: c.Human}
	if err := s.local.admit(queue, OpChallenge, &c, lim, Limit{}, nets, time.Now()); err != nil {
		s.observe(queue, OpChallenge, Ticket{}, err)
		return 0, err
	}
	keys := []string{q.keys.config, q.keys.waiting, q.keys.draw, q.keys.arriving,
		q.clientKey(OpChallenge, c), q.netKey(OpChallenge, c, 0), q.netKey(OpChallenge, c, 1), q.keys.held}
	priced := s.defaults.Price.Bits > 0
	if priced {
		q.seen.seenOne(&c, time.Now()) // its networks' first place here is free (seen.go)
	}
	var seen [2]int
	if _, _, counted := enterAsks(c, priced); counted > 0 {
		for i, n := range c.Networks[:counted] {
			keys = append(keys, q.keys.netPlacesKey(n))
			if c.seen[i] {
				seen[i] = 1
			}
		}
	}
	flags := 0
	if c.Pricing == PriceCeiling {
		flags |= 1
	}
	if c.Human {
		flags |= 2
	}
	args := append(append(q.args, s.enterLimits[0], s.enterLimits[1]), s.networkArgs[:4]...)
	args = append(args,
		c.clientCost, c.netCosts[0], c.netCosts[1], s.networkArgs[4], s.networkArgs[5], s.networkArgs[6],
		s.humanArg(), seen[0], seen[1], flags)
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]int64, error) {
		return challengeScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
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
		s.local.refused(queue, OpChallenge, c, lim, Limit{}, nets)
		s.observe(queue, OpChallenge, Ticket{}, err)
		return 0, err
	}
	return int(value), nil
}
