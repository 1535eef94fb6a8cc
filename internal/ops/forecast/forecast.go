// Package forecast tells an operator, before a change, what a refill
// size would do to the people waiting now: when the line
// drains, how long its last person waits, and the wait at chosen places.
// It works from the line as it is (internal/engine/queue), the abandonment seen
// in the last 10 minutes, max_active and the schedule's windows; it
// changes nothing.
package forecast

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// Line is what a forecast starts from.
type Line struct {
	Waiting       int64         // the people in the line (or lane) now
	Interval      time.Duration // between ticks
	UntilNextTick time.Duration // until the next tick admits
	SessionTTL    time.Duration
	MaxActive     int     // 0: no cap
	Share         float64 // the line's share of each interval (1: the whole queue)
	// Abandonment is the share of places reaching the head that were
	// dropped as abandoned (queue.LineStats.AbandonmentRate): they leave
	// without using the refill, so the line moves faster by 1/(1-a).
	Abandonment float64
	Windows     []queue.Window // the schedule: refill_size, max_active and paused override within each
	Now         time.Time
}

// Result is a forecast at one refill size.
type Result struct {
	RefillSize int    `json:"refill_size"`
	Lane       string `json:"lane,omitempty"`
	Waiting    int64  `json:"waiting"`
	// DrainSeconds is until the line is empty, LastWaitSeconds the wait
	// of the last person in it now: the same figure while the forecast
	// counts the people waiting now and not those still to come; null:
	// never (paused for good, no share).
	DrainSeconds    *int64     `json:"drain_seconds"`
	LastWaitSeconds *int64     `json:"last_wait_seconds"`
	ETAForPosition  [][2]int64 `json:"eta_for_position"` // [position, seconds] at chosen places
}

// Of forecasts the line at refill size refill.
func Of(l Line, refill int) Result {
	r := Result{RefillSize: refill, Waiting: l.Waiting}
	for _, p := range positions(l.Waiting) {
		if s, ok := l.wait(refill, p); ok {
			r.ETAForPosition = append(r.ETAForPosition, [2]int64{p, s})
		}
	}
	if s, ok := l.wait(refill, l.Waiting); ok {
		r.DrainSeconds, r.LastWaitSeconds = &s, &s
	}
	return r
}

// positions are the places a forecast gives the wait at: the first, the
// quarters and the last.
func positions(n int64) []int64 {
	var out []int64
	for _, p := range []int64{1, n / 4, n / 2, 3 * n / 4, n} {
		if p >= 1 && (len(out) == 0 || p > out[len(out)-1]) {
			out = append(out, p)
		}
	}
	return out
}

// rateAt is how many places leave the line in the interval whose tick is
// at t: the line's part of the refill (the window's, if one is in force),
// no more than max_active lets in over a session, and the abandoned
// places that leave with them.
func (l Line) rateAt(refill int, t time.Time) float64 {
	maxActive, paused := l.MaxActive, false
	for _, w := range l.Windows {
		if !t.Before(w.Start) && t.Before(w.End) {
			if w.RefillSize != nil {
				refill = *w.RefillSize
			}
			if w.MaxActive != nil {
				maxActive = *w.MaxActive
			}
			if w.Paused != nil {
				paused = *w.Paused
			}
		}
	}
	if paused {
		return 0
	}
	r := float64(refill) * l.Share
	if maxActive > 0 && l.SessionTTL > 0 {
		// With every session lasting its TTL, max_active admits at most
		// this many an interval.
		r = math.Min(r, float64(maxActive)*l.Interval.Seconds()/l.SessionTTL.Seconds())
	}
	a := math.Min(math.Max(l.Abandonment, 0), 0.95)
	return r / (1 - a)
}

// wait is how long position p waits: until the tick that carries its
// place out, from now; false when the line never gets there. The ticks
// fall every interval from the next one; between the windows' edges the
// rate is constant, so the walk takes one step per stretch (at most two
// per window and one after the last), never one per tick: a forecast's
// cost is bounded by the schedule's size, however far it looks.
func (l Line) wait(refill int, p int64) (int64, bool) {
	if p <= 0 {
		return 0, true
	}
	if l.Interval <= 0 {
		return 0, false
	}
	first := l.Now.Add(l.UntilNextTick)
	left := float64(p)
	k := int64(0) // the next tick's index: first + k x interval
	for _, edge := range append(l.edges(first), time.Time{}) {
		rate := l.rateAt(refill, first.Add(time.Duration(k)*l.Interval))
		// The ticks of this stretch: up to the next edge (none: for ever).
		ticks := int64(math.MaxInt64)
		if !edge.IsZero() {
			ticks = tickIndex(first, l.Interval, edge) - k
		}
		if rate > 0 {
			need := int64(math.Ceil(left/rate - 1e-6)) // whole places: a float a hair over one is that one
			if need <= ticks {
				at := first.Add(time.Duration(k+need-1) * l.Interval)
				return int64(math.Ceil(at.Sub(l.Now).Seconds())), true
			}
			left -= float64(ticks) * rate
		}
		if edge.IsZero() {
			return 0, false
		}
		k += ticks
	}
	return 0, false
}

// edges are the windows' starts and ends after first, in order, each
// moved to the first tick at or after it (where the rate changes).
func (l Line) edges(first time.Time) []time.Time {
	var out []time.Time
	for _, w := range l.Windows {
		for _, t := range []time.Time{w.Start, w.End} {
			if t.After(first) {
				out = append(out, first.Add(time.Duration(tickIndex(first, l.Interval, t))*l.Interval))
			}
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return slices.CompactFunc(out, time.Time.Equal)
}

// tickIndex is the index of the first tick at or after t.
func tickIndex(first time.Time, interval time.Duration, t time.Time) int64 {
	d := t.Sub(first)
	return int64((d + interval - 1) / interval)
}

// ErrUnknownLane is a forecast asked for a lane the queue does not have.
var ErrUnknownLane = errors.New("forecast: unknown lane")

// Store is what a forecast reads of the queue (*queue.Inspector).
type Store interface {
	Overview(ctx context.Context, queue string) (queue.Overview, error)
	Lines(ctx context.Context, queue string) ([]queue.LineState, error)
	Schedule(ctx context.Context, queue string) (queue.Schedule, *queue.Window, error)
}

// Forecaster forecasts a queue's line from the store.
type Forecaster struct {
	Store Store
}

// Forecast forecasts queue's line (lane: one lane's, "" the whole line)
// at refill size refill: five round trips (the overview, the lines, the
// schedule), whatever the line's length.
func (f Forecaster) Forecast(ctx context.Context, q string, refill int, lane string) (Result, error) {
	o, err := f.Store.Overview(ctx, q)
	if err != nil {
		return Result{}, err
	}
	lines, err := f.Store.Lines(ctx, q)
	if err != nil {
		return Result{}, err
	}
	sched, _, err := f.Store.Schedule(ctx, q)
	if err != nil {
		return Result{}, err
	}
	l := Line{Interval: o.Settings.RefillInterval, SessionTTL: o.Settings.SessionTTL, MaxActive: o.Settings.MaxActive,
		Share: 1, Abandonment: o.Abandonment(), Windows: sched.Windows, Now: o.Now}
	if !o.LastTickAt.IsZero() {
		l.UntilNextTick = max(0, o.LastTickAt.Add(l.Interval).Sub(o.Now))
	}
	found := lane == ""
	for _, line := range lines {
		switch {
		case lane == "":
			l.Waiting += line.Waiting
		case line.Lane == lane && line.Share > 0:
			l.Waiting, l.Share, found = line.Waiting, line.Share, true
		}
	}
	if !found {
		return Result{}, ErrUnknownLane
	}
	res := Of(l, refill)
	res.Lane = lane
	return res, nil
}
