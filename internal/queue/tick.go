package queue

// The refill tick (tick.lua): every replica calls it several times per
// interval, and one call per interval applies it.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
	var lanes []string
	var window []int64 // a window's change made by an attempt that was called again
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]int64, error) {
		// The lanes the last call saw, which rarely change: the script
		// checks them, and when they have (a PATCH, a window starting, a
		// first place in a lane) it changes nothing but the windows and
		// says so (-1), and is called again with a fresh reading.
		seen := q.lanesSeen.Load()
		for range 3 {
			if seen == nil {
				read, err := s.readLanes(ctx, q)
				if err != nil {
					return nil, err
				}
				seen = &read
				q.lanesSeen.Store(seen)
			}
			lanes = *seen
			keys := q.tickKeys
			for _, l := range lanes {
				lk := keysForLine(queue, l)
				keys = append(keys[:len(keys):len(keys)], lk.waiting, lk.heard, lk.held, lk.stale, lk.draw, lk.seq, lk.arrivals, lk.laneHistory)
			}
			v, err := tickScript.Run(ctx, s.rdb, keys,
				append(q.args[:], purgeBatch, HistoryLen, abandonBatch, drawSeed(), drawBatch, p.Refill, p.Base, holdBatch,
					strings.Join(lanes, ","))...).Int64Slice()
			if err == nil && len(v) >= tickLen && window != nil && v[tickWindow] == 0 {
				v[tickWindow], v[tickWindowAt] = window[0], window[1]
			}
			if err != nil || len(v) < tickLen || v[tickApplied] != -1 {
				return v, err
			}
			if v[tickWindow] != 0 {
				window = []int64{v[tickWindow], v[tickWindowAt]}
			}
			seen = nil
		}
		return nil, errors.New("the lanes kept changing")
	})
	if err != nil {
		return TickResult{}, fmt.Errorf("queue: tick: %w", err)
	}
	return newTickResult(v, lanes)
}

// drawSeed is a fresh random seed for a draw: 52 bits, which Lua holds
// exactly.
func drawSeed() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return strconv.FormatUint(binary.BigEndian.Uint64(b[:])>>12, 10)
}
