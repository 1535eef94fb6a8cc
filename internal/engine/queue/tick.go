package queue

// The refill tick (tick.lua): every replica calls it several times per
// interval, and one call per interval applies it. The schedule's windows
// (windows.lua) are applied by their own script, called when the tick
// finds one starting or ending.

import (
	"context"
	"errors"
	"fmt"
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
// the tick opens (internal/ops/autorate): an applied tick stores it, atomically
// with the tick, if the queue's budget is still p.Base and the controller
// is on (TickResult.Adapted); else it changes nothing. A zero Proposal is
// none. A call that fails after starting or ending a window of the
// schedule still returns that change (TickResult.Window) with its error.
func (s *Store) TickWith(ctx context.Context, queue string, p Proposal) (TickResult, error) {
	q, err := s.queue(queue)
	if err != nil {
		return TickResult{}, err
	}
	type result struct {
		v      []int64
		lanes  []string
		window *WindowChange
	}
	r, err := WaitFor(ctx, s.timeout, func(ctx context.Context) (result, error) {
		var r result
		// The lanes the last call saw, which rarely change: the script
		// checks them, and when they have (a PATCH, a window starting, a
		// first place in a lane) it changes nothing and says so, and is
		// called again with a fresh reading. Likewise when a window of
		// the schedule starts or ends: windows.lua makes that change
		// first, and may change the lanes.
		seen := q.lanesSeen.Load()
		for range 3 {
			if seen == nil {
				read, err := s.readLanes(ctx, q)
				if err != nil {
					return r, err
				}
				seen = &read
				q.lanesSeen.Store(seen)
			}
			r.lanes = *seen
			keys := q.tickKeys
			for _, l := range r.lanes {
				lk := keysForLine(queue, l)
				keys = append(keys[:len(keys):len(keys)], lk.waiting, lk.heard, lk.held, lk.stale, lk.draw, lk.seq, lk.arrivals, lk.laneHistory,
					lk.drawKeys, lk.drawList)
			}
			away := "0" // this replica's ticks reached Redis until now
			if !q.tickedOK.Load() {
				away = "1" // its first, or Redis did not answer it lately
			}
			v, err := tickScript.Run(ctx, s.rdb, keys,
				append(q.args, purgeBatch, HistoryLen, abandonBatch, drawBatch, p.Refill, p.Base, holdBatch,
					strings.Join(r.lanes, ","), away)...).Int64Slice()
			if err != nil {
				q.tickedOK.Store(false)
				return r, err
			}
			q.tickedOK.Store(true)
			if len(v) <= tickApplied {
				return r, fmt.Errorf("unexpected reply %v", v)
			}
			switch v[tickApplied] {
			case tickLanesChanged:
			case tickWindowsDue:
				w, err := s.applyWindows(ctx, q)
				if err != nil {
					return r, err
				}
				if w != nil { // nil: another replica's call made it first
					r.window = w
				}
			default:
				r.v = v
				return r, nil
			}
			seen = nil
		}
		return r, errors.New("the lanes or the windows kept changing")
	})
	if err != nil {
		// windows.lua's change stands whatever came after it: told, it is
		// audited like any other.
		return TickResult{Window: r.window}, fmt.Errorf("queue: tick: %w", err)
	}
	return newTickResult(r.v, r.lanes, r.window)
}

// applyWindows runs windows.lua: the start or end of a window of the
// schedule, if no replica has made it yet. Returns the change it made
// (nil: none).
func (s *Store) applyWindows(ctx context.Context, q *queueRef) (*WindowChange, error) {
	k := q.keys
	raw, err := windowsScript.Run(ctx, s.rdb, []string{k.config, k.tick, k.events, k.lanes, k.schedule}, q.args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("windows: %w", err)
	}
	return newWindowChange(raw)
}
