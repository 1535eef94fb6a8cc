package queue

// A queue's lines: the general lane's, the queue's own keys,
// and one per lane (lanes.go), each with its scripts' KEYS and batchers.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// laneRefs are one queue's lane lines, by lane name.
type laneRefs struct {
	mu    sync.Mutex
	lines map[string]*queueRef
}

// newRef builds the ref of queue's lane line ("": the queue's own, the
// general lane).
func (s *Store) newRef(name, lane string) *queueRef {
	k := keysForLine(name, lane)
	q := &queueRef{
		keys:       k,
		enterKeys:  []string{k.waiting, k.entered, k.tokens, k.seq, k.config, k.tick, k.heard, k.draw, k.admitted, k.events, k.gen, k.stale, k.arriving, k.lanes},
		statusKeys: []string{k.waiting, k.entered, k.config, k.tick, k.heard, k.gone, k.draw, k.admitted, k.gen, k.held},
		doneKeys:   []string{k.entered, k.gone, k.admitted, k.config, k.events, k.inside},
		renewKeys:  []string{k.entered, k.config, k.admitted},
		leaveKeys:  []string{k.waiting, k.entered, k.heard, k.gone, k.draw, k.admitted, k.config, k.events, k.gen, k.held, k.stale, k.seq, k.bulk},
		tickKeys: []string{k.waiting, k.entered, k.tokens, k.config, k.tick, k.history, k.heard, k.gone, k.draw, k.admitted, k.events,
			k.seq, k.arrivals, k.samples, k.inside, k.held, k.stale, k.lanes, k.schedule, k.drawKeys, k.drawList, k.drawSeed},
		infoKeys: []string{k.waiting, k.entered, k.tokens, k.config, k.tick, k.draw},
		snapKeys: []string{k.waiting, k.config, k.tick, k.draw, k.held, k.stale, k.seq},
		stale:    newStaleSet(),
	}
	q.args = make([]any, len(s.defaultArgs)+1)
	copy(q.args, s.defaultArgs)
	q.args[len(s.defaultArgs)] = lane
	if lane == "" {
		q.lanes = &laneRefs{lines: map[string]*queueRef{}}
	}
	q.enters = batcher{timeout: s.timeout, run: func(ctx context.Context, calls []Caller) ([]Ticket, error) {
		s.observer.Batch(name, OpEnter, len(calls))
		priced := s.defaults.Price.Bits > 0
		if priced {
			q.seen.look(calls, time.Now()) // each call's networks' first place? (seen.go)
		}
		keys, args, gen := s.enterArgs(q, calls)
		tickets, err := s.runEnter(ctx, name, q, len(calls), keys, args) // the script, and WAIT if set (replica.go)
		for i := range tickets {
			if _, stale := tickets[i].refused.(drawStale); stale {
				tickets[i].refused = drawStale{gen: gen} // the caller reads a seal newer than this one
			}
		}
		if priced && err == nil {
			q.seen.placed(calls, tickets, time.Now())
		}
		return tickets, err
	}}
	q.statuses = batcher{timeout: s.timeout, run: func(ctx context.Context, calls []Caller) ([]Ticket, error) {
		s.observer.Batch(name, OpStatus, len(calls))
		keys, args := s.statusArgs(q, calls)
		return s.runBatch(ctx, "status", statusScript, len(calls), keys, args)
	}}
	return q
}

// line is the ref of the line user's place is in: its lane's (LaneOf), or
// the queue's own.
func (s *Store) line(queue, user string) (*queueRef, error) {
	q, err := s.queue(queue)
	if err != nil {
		return nil, err
	}
	lane := LaneOf(user)
	if lane == "" {
		return q, nil
	}
	return s.laneRef(q, queue, lane)
}

// laneRef is the ref of lane's line in queue (q: the queue's own ref),
// made on first use.
func (s *Store) laneRef(q *queueRef, queue, lane string) (*queueRef, error) {
	q.lanes.mu.Lock()
	defer q.lanes.mu.Unlock()
	l, ok := q.lanes.lines[lane]
	if !ok {
		if len(q.lanes.lines) >= MaxLaneRefs {
			return nil, ErrUnknownLane
		}
		l = s.newRef(queue, lane)
		q.lanes.lines[lane] = l
	}
	return l, nil
}

// otherLines are the lines of queue other than own in which an account
// may hold a place, for enter.lua to look in: the general lane's (when
// own is a lane's) and those of the lanes as this replica knows them
// (knownLanes: configured, or removed and still holding places). The
// script checks that they cover the lanes SET, so a lane this replica
// has not seen yet is never skipped (statusOtherLine, 0). None, and no
// cost at all, for a general lane's enter while the queue has no lanes
// as far as this replica knows: its ticks, several an interval, read the
// lanes again when they change, so a lane configured since then can
// hold a place a general enter does not look for until its next tick.
func (s *Store) otherLines(ctx context.Context, queue string, own *queueRef) ([]*queueRef, error) {
	q, err := s.queue(queue)
	if err != nil {
		return nil, err
	}
	lanes, err := s.knownLanes(ctx, q)
	if err != nil {
		return nil, err
	}
	var out []*queueRef
	if own.keys.lane != "" {
		out = append(out, q)
	}
	for _, lane := range lanes {
		if lane == own.keys.lane {
			continue
		}
		l, err := s.laneRef(q, queue, lane)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// forgetLanes drops this replica's reading of queue's lanes, so the next
// call that needs them reads them again.
func (s *Store) forgetLanes(queue string) {
	if q, err := s.queue(queue); err == nil {
		q.lanesSeen.Store(nil)
	}
}

// checkLane reports ErrUnknownLane unless queue's lanes include lane (one
// read of the config; only a lane's newcomer pays it).
func (s *Store) checkLane(ctx context.Context, queue, lane string) error {
	q, err := s.queue(queue)
	if err != nil {
		return err
	}
	raw, err := WaitFor(ctx, s.timeout, func(ctx context.Context) (string, error) {
		v, err := s.rdb.HGet(ctx, q.keys.config, "lanes").Result()
		if errors.Is(err, redis.Nil) {
			return "", nil
		}
		return v, err
	})
	if err != nil {
		return fmt.Errorf("queue: lanes: %w", err)
	}
	ls, _ := ParseLanes(raw)
	if !ls.Has(lane) {
		return ErrUnknownLane
	}
	return nil
}

// readLanes reads the lanes tick.lua works on: the configured ones and
// those of the lanes SET (still holding places), sorted, in one round
// trip.
func (s *Store) readLanes(ctx context.Context, q *queueRef) ([]string, error) {
	names, _, err := s.lanesOf(ctx, q)
	return names, err
}

// lanesOf is readLanes with the configured lanes.
func (s *Store) lanesOf(ctx context.Context, q *queueRef) ([]string, Lanes, error) {
	var configured *redis.StringCmd
	var held *redis.StringSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		configured = p.HGet(ctx, q.keys.config, "lanes")
		held = p.SMembers(ctx, q.keys.lanes)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	names := held.Val()
	var ls Lanes
	if raw := configured.Val(); raw != "" {
		if err := json.Unmarshal([]byte(raw), &ls); err != nil {
			return nil, nil, fmt.Errorf("stored lanes: %w", err)
		}
		for _, l := range ls {
			names = append(names, l.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), ls, nil
}

// LineState is one of a queue's lines as it stands.
type LineState struct {
	Lane    string  // "": the general lane
	Share   float64 // the share it is served at (lineShares: the general lane's is what the lanes leave)
	Waiting int64   // in its line, a scheduled opening's draw included
}

// Lines returns queue's lines, the general lane's first, then the lanes'
// by name: two round trips (the lanes, then their lengths).
func (in *Inspector) Lines(ctx context.Context, queue string) ([]LineState, error) {
	s := in.s
	q, err := s.queue(queue)
	if err != nil {
		return nil, err
	}
	return WaitFor(ctx, s.timeout, func(ctx context.Context) ([]LineState, error) {
		names, configured, err := s.lanesOf(ctx, q)
		if err != nil {
			return nil, err
		}
		var removed map[string]float64
		if gone := slices.DeleteFunc(slices.Clone(names), configured.Has); len(gone) > 0 {
			if removed, err = s.removedShares(ctx, q, gone); err != nil {
				return nil, err
			}
		}
		general, shares := lineShares(configured, removed)
		out := []LineState{{Share: general}}
		for _, n := range names {
			out = append(out, LineState{Lane: n, Share: shares[n]})
		}
		counts, err := s.lineLengths(ctx, queue, append([]string{""}, names...))
		if err != nil {
			return nil, err
		}
		for i := range out {
			out[i].Waiting = counts[i]
		}
		return out, nil
	})
}

// lineLengths counts the people in each of lanes' lines ("": the general
// lane), a scheduled opening's draw included, in one round trip.
func (s *Store) lineLengths(ctx context.Context, queue string, lanes []string) ([]int64, error) {
	counts := make([]*redis.IntCmd, 2*len(lanes))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, l := range lanes {
			k := keysForLine(queue, l)
			counts[2*i], counts[2*i+1] = p.ZCard(ctx, k.waiting), p.SCard(ctx, k.draw)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queue: lines: %w", err)
	}
	out := make([]int64, len(lanes))
	for i := range lanes {
		out[i] = counts[2*i].Val() + counts[2*i+1].Val()
	}
	return out, nil
}

// knownLanes are the lanes as this replica's last tick call saw them
// (read once, if it has made none yet): what counting the queue's people
// needs, without a read of its own on every call.
func (s *Store) knownLanes(ctx context.Context, q *queueRef) ([]string, error) {
	if seen := q.lanesSeen.Load(); seen != nil {
		return *seen, nil
	}
	read, err := s.readLanes(ctx, q)
	if err != nil {
		return nil, err
	}
	q.lanesSeen.Store(&read)
	return read, nil
}

// removedShares reads the shares the lanes gone had when they were
// removed (the tick HASH's share:<lane>, tick.lua serves them at it).
func (s *Store) removedShares(ctx context.Context, q *queueRef, gone []string) (map[string]float64, error) {
	fields := make([]string, len(gone))
	for i, n := range gone {
		fields[i] = "share:" + n
	}
	v, err := s.rdb.HMGet(ctx, q.keys.tick, fields...).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(gone))
	for i, n := range gone {
		str, _ := v[i].(string)
		out[n], _ = strconv.ParseFloat(str, 64) // none: 0
	}
	return out, nil
}

// lineShares is the tick's rule (lines_now, tick_lines.lua) for the share each line is
// served at: the lanes removed (removed) keep the shares they had first,
// scaled down only if they alone exceed the whole; the configured lanes
// give way in proportion to fit in what is left; the general lane gets
// the rest.
func lineShares(configured Lanes, removed map[string]float64) (general float64, shares map[string]float64) {
	var gone, kept float64
	for _, sh := range removed {
		gone += sh
	}
	for _, l := range configured {
		kept += l.Share
	}
	goneScale, keptScale := 1.0, 1.0
	if gone > 1 {
		goneScale = 1 / gone
	}
	if left := 1 - gone*goneScale; kept > 0 && kept > left {
		keptScale = left / kept
	}
	shares = make(map[string]float64, len(configured)+len(removed))
	general = 1
	for n, sh := range removed {
		shares[n] = sh * goneScale
		general -= shares[n]
	}
	for _, l := range configured {
		shares[l.Name] = l.Share * keptScale
		general -= shares[l.Name]
	}
	return max(0, general), shares
}
