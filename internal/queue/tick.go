package queue

// The refill tick (tick.lua): every replica calls it several times per
// interval, and one call per interval applies it.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
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
		// The lanes can change between the caller's reading and the
		// script's (a PATCH, a window starting, a first place in a lane):
		// the script then changes nothing but the windows and says so
		// (-1), and is called again with a new reading.
		for range 3 {
			var err error
			if lanes, err = s.tickLanes(ctx, q); err != nil {
				return nil, err
			}
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
		}
		return nil, errors.New("the lanes kept changing")
	})
	if err != nil {
		return TickResult{}, fmt.Errorf("queue: tick: %w", err)
	}
	return newTickResult(v, lanes)
}

// tickLanes reads the lanes tick.lua works on: the configured ones and
// those of the lanes SET (still holding places), sorted, in one round
// trip.
func (s *Store) tickLanes(ctx context.Context, q *queueRef) ([]string, error) {
	var configured *redis.StringCmd
	var held *redis.StringSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		configured = p.HGet(ctx, q.keys.config, "lanes")
		held = p.SMembers(ctx, q.keys.lanes)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	names := held.Val()
	if raw := configured.Val(); raw != "" {
		var ls Lanes
		if err := json.Unmarshal([]byte(raw), &ls); err != nil {
			return nil, fmt.Errorf("stored lanes: %w", err)
		}
		for _, l := range ls {
			names = append(names, l.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// drawSeed is a fresh random seed for a draw: 52 bits, which Lua holds
// exactly.
func drawSeed() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return strconv.FormatUint(binary.BigEndian.Uint64(b[:])>>12, 10)
}
