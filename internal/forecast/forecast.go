// Package forecast tells an operator, before a change, what a refill
// size would do to the people waiting now (issue 30): when the line
// drains, how long its last person waits, and the wait at chosen places.
// It works from the line as it is (internal/queue), the abandonment seen
// in the last 10 minutes, max_active and the schedule's windows; it
// changes nothing.
package forecast

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
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
	RefillSize      int        `json:"refill_size"`
	Lane            string     `json:"lane,omitempty"`
	Waiting         int64      `json:"waiting"`
	DrainSeconds    *int64     `json:"drain_seconds"`     // until the line is empty; null: never (paused, no share)
	LastWaitSeconds *int64     `json:"last_wait_seconds"` // the wait of the last person in line now
	ETAForPosition  [][2]int64 `json:"eta_for_position"`  // [position, seconds] at chosen places
}

// maxIntervals bounds the walk: a forecast beyond it is "never".
const maxIntervals = 10_000_000

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

// wait is how long position p waits: the tick that carries its place
// out, from now; false when the line never gets there.
func (l Line) wait(refill int, p int64) (int64, bool) {
	if p <= 0 || l.Interval <= 0 {
		return 0, p <= 0
	}
	t := l.Now.Add(l.UntilNextTick)
	gone := 0.0
	for i := 0; i < maxIntervals; i++ {
		gone += l.rateAt(refill, t)
		if gone+1e-9 >= float64(p) {
			return int64(math.Ceil(t.Sub(l.Now).Seconds())), true
		}
		t = t.Add(l.Interval)
		if i > 1000 && l.rateAt(refill, t) == 0 && !l.windowAhead(t) {
			return 0, false
		}
	}
	return 0, false
}

// windowAhead reports whether a window starts after t (a paused stretch
// may end).
func (l Line) windowAhead(t time.Time) bool {
	for _, w := range l.Windows {
		if w.End.After(t) {
			return true
		}
	}
	return false
}

// ErrUnknownLane is a forecast asked for a lane the queue does not have.
var ErrUnknownLane = errors.New("forecast: unknown lane")

// Store is what a forecast reads of the queue.
type Store interface {
	Info(ctx context.Context, queue string) (queue.Info, error)
	LineLengths(ctx context.Context, queue string) (map[string]int64, error)
	LineReport(ctx context.Context, queue string) (queue.LineReport, error)
	Schedule(ctx context.Context, queue string) (queue.Schedule, *queue.Window, error)
	Values(ctx context.Context, queue string) (map[string]any, error)
}

// Forecaster forecasts a queue's line from the store.
type Forecaster struct {
	Store Store
}

// Forecast forecasts queue's line (lane: one lane's, "" the whole line)
// at refill size refill.
func (f Forecaster) Forecast(ctx context.Context, q string, refill int, lane string) (Result, error) {
	info, err := f.Store.Info(ctx, q)
	if err != nil {
		return Result{}, err
	}
	lengths, err := f.Store.LineLengths(ctx, q)
	if err != nil {
		return Result{}, err
	}
	report, err := f.Store.LineReport(ctx, q)
	if err != nil {
		return Result{}, err
	}
	sched, _, err := f.Store.Schedule(ctx, q)
	if err != nil {
		return Result{}, err
	}
	values, err := f.Store.Values(ctx, q)
	if err != nil {
		return Result{}, err
	}
	lanes, _ := values["lanes"].(queue.Lanes)
	l := Line{Interval: info.Settings.RefillInterval, SessionTTL: info.Settings.SessionTTL, MaxActive: info.Settings.MaxActive,
		Share: 1, Abandonment: report.Stats.AbandonmentRate, Windows: sched.Windows, Now: info.Now}
	if !info.LastTickAt.IsZero() {
		l.UntilNextTick = max(0, info.LastTickAt.Add(l.Interval).Sub(info.Now))
	}
	if lane == "" {
		for _, n := range lengths {
			l.Waiting += n
		}
	} else {
		if !lanes.Has(lane) {
			return Result{}, ErrUnknownLane
		}
		l.Waiting, l.Share = lengths[lane], lanes.Share(lane)
	}
	res := Of(l, refill)
	res.Lane = lane
	return res, nil
}
