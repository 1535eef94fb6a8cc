package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// A schedule of windows: each window overrides some of a queue's
// settings from its start to its end. windows.lua applies them, before
// the tick, on the Redis clock, whichever replica ticks: at a window's
// start it writes its own and remembers each field's value before and
// the value it wrote, at its end it puts back those nobody changed since,
// each exactly once.

// Window is one window of a schedule; a nil override leaves that setting
// as it is.
type Window struct {
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	RefillSize *int      `json:"refill_size,omitempty"`
	MaxActive  *int      `json:"max_active,omitempty"`
	Lanes      *Lanes    `json:"lanes,omitempty"`
	Paused     *bool     `json:"paused,omitempty"`
}

// Schedule is a queue's windows, in start order.
type Schedule struct {
	Windows []Window `json:"windows"`
}

// MaxWindows bounds a schedule: the tick reads it on every call.
const MaxWindows = 100

// ErrInvalidSchedule is a schedule refused (400 invalid_schedule).
var ErrInvalidSchedule = errors.New("invalid schedule")

func scheduleError(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidSchedule}, a...)...)
}

// Validate checks the windows: each ends after it starts, its overrides
// are in their settings' ranges, and no two overlap. It sorts them by
// start.
func (sc *Schedule) Validate() error {
	if len(sc.Windows) > MaxWindows {
		return scheduleError("at most %d windows", MaxWindows)
	}
	slices.SortFunc(sc.Windows, func(a, b Window) int { return a.Start.Compare(b.Start) })
	refill, _ := Lookup("refill_size")
	maxActive, _ := Lookup("max_active")
	for i, w := range sc.Windows {
		if w.Start.IsZero() || w.End.IsZero() || !w.End.After(w.Start) {
			return scheduleError("window %d: end must be after start (RFC 3339 times)", i+1)
		}
		if w.RefillSize != nil && refill.Check(*w.RefillSize) != nil {
			return scheduleError("window %d: refill_size must be an integer from 1 to %d", i+1, MaxRefillSize)
		}
		if w.MaxActive != nil && maxActive.Check(*w.MaxActive) != nil {
			return scheduleError("window %d: max_active must be an integer from 0 to %d", i+1, MaxMaxActive)
		}
		if w.Lanes != nil {
			if err := w.Lanes.Validate(); err != nil {
				return scheduleError("window %d: %v", i+1, errors.Unwrap(err))
			}
		}
		if i > 0 && w.Start.Before(sc.Windows[i-1].End) {
			return scheduleError("windows %d and %d overlap", i, i+1)
		}
	}
	return nil
}

// storedWindow is a window as schedule.lua reads it: times in ms, the lanes
// as the config HASH holds them ("" for none).
type storedWindow struct {
	StartMS    int64   `json:"start_ms"`
	EndMS      int64   `json:"end_ms"`
	RefillSize *int    `json:"refill_size,omitempty"`
	MaxActive  *int    `json:"max_active,omitempty"`
	Lanes      *string `json:"lanes,omitempty"`
	Paused     *bool   `json:"paused,omitempty"`
}

type storedSchedule struct {
	Windows []storedWindow `json:"windows"`
}

func (sc Schedule) stored() storedSchedule {
	out := storedSchedule{Windows: []storedWindow{}}
	for _, w := range sc.Windows {
		sw := storedWindow{StartMS: w.Start.UnixMilli(), EndMS: w.End.UnixMilli(), RefillSize: w.RefillSize, MaxActive: w.MaxActive, Paused: w.Paused}
		if w.Lanes != nil {
			l := w.Lanes.encode()
			sw.Lanes = &l
		}
		out.Windows = append(out.Windows, sw)
	}
	return out
}

func (ss storedSchedule) schedule() Schedule {
	out := Schedule{Windows: []Window{}}
	for _, sw := range ss.Windows {
		w := Window{Start: time.UnixMilli(sw.StartMS).UTC(), End: time.UnixMilli(sw.EndMS).UTC(), RefillSize: sw.RefillSize, MaxActive: sw.MaxActive, Paused: sw.Paused}
		if sw.Lanes != nil {
			ls, _ := ParseLanes(*sw.Lanes)
			if ls == nil {
				ls = Lanes{}
			}
			w.Lanes = &ls
		}
		out.Windows = append(out.Windows, w)
	}
	return out
}

// SetSchedule validates sc and stores it as queue's schedule, replacing
// the one before, which it returns with the window of sc in force (nil:
// none) as the tick last applied it, all in one round trip. An empty one
// removes the windows (a window in force then ends at the next tick call,
// its saved settings written back).
func (in *Inspector) SetSchedule(ctx context.Context, queue string, sc Schedule) (before Schedule, inForce *Window, err error) {
	s := in.s
	q, err := s.queue(queue)
	if err != nil {
		return Schedule{}, nil, err
	}
	if err := sc.Validate(); err != nil {
		return Schedule{}, nil, err
	}
	stored := sc.stored()
	b, err := json.Marshal(stored)
	if err != nil {
		return Schedule{}, nil, err
	}
	old, applied, err := s.readSchedule(ctx, q, func(ctx context.Context, p redis.Pipeliner) stringReply {
		return p.SetArgs(ctx, q.keys.schedule, b, redis.SetArgs{Get: true}) // with GET: the value before
	})
	if err != nil {
		return Schedule{}, nil, err
	}
	_, inForce = stored.inForce(applied)
	return old.schedule(), inForce, nil
}

// Schedule returns queue's schedule (none: no windows), and the window
// in force as the tick applied it (nil: none).
func (in *Inspector) Schedule(ctx context.Context, queue string) (Schedule, *Window, error) {
	s := in.s
	q, err := s.queue(queue)
	if err != nil {
		return Schedule{}, nil, err
	}
	ss, applied, err := s.readSchedule(ctx, q, func(ctx context.Context, p redis.Pipeliner) stringReply {
		return p.Get(ctx, q.keys.schedule)
	})
	if err != nil {
		return Schedule{}, nil, err
	}
	sc, w := ss.inForce(applied)
	return sc, w, nil
}

// stringReply is a command whose reply is a string: GET's, or SET's with
// GET.
type stringReply interface{ Val() string }

// readSchedule runs get (a read of the schedule key, which may write it
// too) with a read of the window the tick applied, in one round trip.
func (s *Store) readSchedule(ctx context.Context, q *queueRef, get func(context.Context, redis.Pipeliner) stringReply) (storedSchedule, string, error) {
	var raw, applied string
	_, err := WaitFor(ctx, s.timeout, func(ctx context.Context) (struct{}, error) {
		var sched stringReply
		var tick *redis.StringCmd
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			sched = get(ctx, p)
			tick = p.HGet(ctx, q.keys.tick, "window")
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return struct{}{}, err
		}
		raw, applied = sched.Val(), tick.Val()
		return struct{}{}, nil
	})
	if err != nil {
		return storedSchedule{}, "", fmt.Errorf("queue: schedule: %w", err)
	}
	var ss storedSchedule
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &ss); err != nil {
			return storedSchedule{}, "", fmt.Errorf("queue: stored schedule: %w", err)
		}
	}
	return ss, applied, nil
}

// inForce is the schedule and its window the tick applied (applied: the
// tick HASH's "window", its start in ms; nil: none of these).
func (ss storedSchedule) inForce(applied string) (Schedule, *Window) {
	sc := ss.schedule()
	for i, w := range ss.Windows {
		if applied != "" && strconv.FormatInt(w.StartMS, 10) == applied {
			return sc, &sc.Windows[i]
		}
	}
	return sc, nil
}
