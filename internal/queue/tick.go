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
	// A window's change made by an attempt that was called again: its
	// start or end happened, once, in that attempt.
	var window *tickReply
	r, err := WaitFor(ctx, s.timeout, func(ctx context.Context) (tickReply, error) {
		// The lanes the last call saw, which rarely change: the script
		// checks them, and when they have (a PATCH, a window starting, a
		// first place in a lane) it changes nothing but the windows and
		// says so (-1), and is called again with a fresh reading.
		seen := q.lanesSeen.Load()
		for range 3 {
			if seen == nil {
				read, err := s.readLanes(ctx, q)
				if err != nil {
					return tickReply{}, err
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
			away := "0" // this replica's ticks reached Redis until now
			if !q.tickedOK.Load() {
				away = "1" // its first, or Redis did not answer it lately
			}
			raw, err := tickScript.Run(ctx, s.rdb, keys,
				append(q.args, purgeBatch, HistoryLen, abandonBatch, drawSeed(), drawBatch, p.Refill, p.Base, holdBatch,
					strings.Join(lanes, ","), away)...).Slice()
			if err != nil {
				q.tickedOK.Store(false)
				return tickReply{}, err
			}
			q.tickedOK.Store(true)
			r, err := readTickReply(raw)
			if err != nil {
				return tickReply{}, err
			}
			if window != nil && r.v[tickWindow] == 0 {
				r.v[tickWindow], r.v[tickWindowAt], r.changes = window.v[tickWindow], window.v[tickWindowAt], window.changes
			}
			if r.v[tickApplied] != -1 {
				return r, nil
			}
			if r.v[tickWindow] != 0 {
				window = &r
			}
			seen = nil
		}
		return tickReply{}, errors.New("the lanes kept changing")
	})
	if err != nil {
		return TickResult{}, fmt.Errorf("queue: tick: %w", err)
	}
	return newTickResult(r.v, r.changes, lanes)
}

// tickReply is tick.lua's reply: every value an integer but
// TICK_WINDOW_CHANGES, a string (in v, 0).
type tickReply struct {
	v       []int64
	changes string
}

// readTickReply reads tick.lua's reply as go-redis gives it.
func readTickReply(raw []any) (tickReply, error) {
	r := tickReply{v: make([]int64, len(raw))}
	for i, x := range raw {
		switch x := x.(type) {
		case int64:
			r.v[i] = x
		case string:
			if i != tickWindowChanges {
				return tickReply{}, fmt.Errorf("unexpected string at %d of the reply", i)
			}
			r.changes = x
		default:
			return tickReply{}, fmt.Errorf("unexpected %T at %d of the reply", x, i)
		}
	}
	if len(r.v) < tickLen {
		return tickReply{}, fmt.Errorf("unexpected reply %v", raw)
	}
	return r, nil
}

// drawSeed is a fresh random seed for a draw: 52 bits, which Lua holds
// exactly.
func drawSeed() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return strconv.FormatUint(binary.BigEndian.Uint64(b[:])>>12, 10)
}
