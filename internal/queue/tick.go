package queue

// The refill tick (tick.lua): every replica calls it several times per
// interval, and one call per interval applies it.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strconv"
	"time"
)

// TickPeriod is how often a replica calls Tick for a refill interval: a
// tenth of it, at most a second. More calls apply each tick sooner after
// its interval starts; the poll policy (Ticket.PollAfter) counts on a
// tick being applied within one period of its start.
func TickPeriod(interval time.Duration) time.Duration {
	return min(interval/ticksPerInterval, time.Second)
}

// ticksPerInterval is how many Tick calls per interval TickPeriod asks.
const ticksPerInterval = 10

// Tick applies the refill tick of the current interval if no replica has
// applied it yet. It is safe, and expected, to call it from every replica
// several times per interval.
func (s *Store) Tick(ctx context.Context, queue string) (TickResult, error) {
	return s.TickWith(ctx, queue, Proposal{})
}

// TickWith is Tick with an effective refill proposed for the interval
// the tick opens (internal/autorate): an applied tick stores it, atomically
// with the tick, if the queue's budget is still p.Base and the controller
// is on (TickResult.Adapted); else it changes nothing. A zero Proposal is
// none.
func (s *Store) TickWith(ctx context.Context, queue string, p Proposal) (TickResult, error) {
	q, err := s.queue(queue)
	if err != nil {
		return TickResult{}, err
	}
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]int64, error) {
		return tickScript.Run(ctx, s.rdb, q.tickKeys,
			append(s.defaultArgs[:], purgeBatch, HistoryLen, abandonBatch, drawSeed(), drawBatch, p.Refill, p.Base, holdBatch)...).Int64Slice()
	})
	if err != nil {
		return TickResult{}, fmt.Errorf("queue: tick: %w", err)
	}
	return newTickResult(v)
}

// drawSeed is a fresh random seed for a draw: 52 bits, which Lua holds
// exactly.
func drawSeed() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return strconv.FormatUint(binary.BigEndian.Uint64(b[:])>>12, 10)
}
