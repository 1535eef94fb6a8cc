package queue

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestScheduleWindowAppliedOnce: two replicas call the tick as fast as
// they can through a window; it starts once and ends once, whichever
// calls, its values are in force between (refill_size, max_active,
// paused, lanes) and the settings from before come back after it.
func TestScheduleWindowAppliedOnce(t *testing.T) {
	ctx := context.Background()
	a, q, rdb := newStore(t, Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour, MaxActive: 50})
	b, err := NewStore(rdb, []string{q}, Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour, MaxActive: 50}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := NewInspector(a).Seed(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(400 * time.Millisecond).Truncate(time.Millisecond)
	refill, active, paused := 40, 0, true
	lanes := Lanes{{Name: "priority", Share: 0.5}}
	// Three seconds long: a test process stalled for longer than the
	// window (600 ms was seen to pass between two ticks under load) sees
	// it end without having seen it start.
	sc := Schedule{Windows: []Window{{Start: start, End: start.Add(3 * time.Second), RefillSize: &refill, MaxActive: &active, Paused: &paused, Lanes: &lanes}}}
	if _, _, err := NewInspector(a).SetSchedule(ctx, q, sc); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var starts, ends int
	var during Values
	var wg sync.WaitGroup
	deadline := time.Now().Add(10 * time.Second)
	for _, s := range []*Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				res, err := s.Tick(ctx, q)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if w := res.Window; w != nil {
					if w.Started {
						starts++
						if v, err := NewInspector(s).Values(ctx, q); err == nil {
							during = v
						}
					}
					if w.Ended {
						ends++
					}
				}
				done := ends > 0
				mu.Unlock()
				if done {
					return
				}
			}
		}()
	}
	wg.Wait()
	if starts != 1 || ends != 1 {
		t.Fatalf("window started %d and ended %d times, want once each", starts, ends)
	}
	if during["refill_size"] != 40 || during["max_active"] != 0 || during["paused"] != true || len(during["lanes"].(Lanes)) != 1 {
		t.Fatalf("during the window: %v", during)
	}
	after, err := NewInspector(a).Values(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if after["refill_size"] != 10 || after["max_active"] != 50 || after["paused"] != false || len(after["lanes"].(Lanes)) != 0 {
		t.Fatalf("after the window: %v", after)
	}
	got, inForce, err := NewInspector(a).Schedule(ctx, q)
	if err != nil || len(got.Windows) != 1 || inForce != nil || !got.Windows[0].Start.Equal(start) {
		t.Fatalf("schedule after: %+v, in force %v, %v", got, inForce, err)
	}
	// Replaced, it answers the schedule before.
	before, inForce, err := NewInspector(b).SetSchedule(ctx, q, Schedule{})
	if err != nil || len(before.Windows) != 1 || *before.Windows[0].RefillSize != 40 || inForce != nil {
		t.Fatalf("replaced: before %+v, in force %v, %v", before, inForce, err)
	}
}

// Values is Inspector.Values' result, for the test's reading.
type Values = map[string]any

// TestScheduleValidate: overlaps, inverted windows and overrides out of
// range are refused.
func TestScheduleValidate(t *testing.T) {
	t0 := time.Date(2026, 12, 24, 9, 0, 0, 0, time.UTC)
	big, zero := MaxRefillSize+1, 0
	bad := Lanes{{Name: "x", Share: 2}}
	for _, c := range []struct {
		name string
		ws   []Window
		ok   bool
	}{
		{"none", nil, true},
		{"two apart", []Window{{Start: t0, End: t0.Add(time.Hour)}, {Start: t0.Add(time.Hour), End: t0.Add(2 * time.Hour)}}, true},
		{"overlap", []Window{{Start: t0, End: t0.Add(time.Hour)}, {Start: t0.Add(30 * time.Minute), End: t0.Add(2 * time.Hour)}}, false},
		{"overlap unsorted", []Window{{Start: t0.Add(30 * time.Minute), End: t0.Add(2 * time.Hour)}, {Start: t0, End: t0.Add(time.Hour)}}, false},
		{"inverted", []Window{{Start: t0, End: t0}}, false},
		{"no end", []Window{{Start: t0}}, false},
		{"refill too big", []Window{{Start: t0, End: t0.Add(time.Hour), RefillSize: &big}}, false},
		{"refill zero", []Window{{Start: t0, End: t0.Add(time.Hour), RefillSize: &zero}}, false},
		{"bad lanes", []Window{{Start: t0, End: t0.Add(time.Hour), Lanes: &bad}}, false},
	} {
		sc := Schedule{Windows: c.ws}
		err := sc.Validate()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidSchedule)) {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
		}
	}
}

// TestWindowsBeforeTheTick: a tick call that finds a window starting
// changes nothing and answers WINDOWS_DUE; windows.lua then starts it
// once (a second call changes nothing), and the tick applies with the
// window's values. Store.Tick does all of that in one call, as it does
// for the window's end.
func TestWindowsBeforeTheTick(t *testing.T) {
	ctx := context.Background()
	s, q, _ := newStore(t, Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour})
	ref, err := s.queue(q)
	if err != nil {
		t.Fatal(err)
	}
	tick := func() []int64 {
		t.Helper()
		v, err := tickScript.Run(ctx, s.rdb, ref.tickKeys, append(ref.args, purgeBatch, HistoryLen, abandonBatch,
			drawBatch, 0, 0, holdBatch, "", "0")...).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	refill, start := 40, time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	sc := Schedule{Windows: []Window{{Start: start, End: start.Add(time.Hour), RefillSize: &refill}}}
	if _, _, err := NewInspector(s).SetSchedule(ctx, q, sc); err != nil {
		t.Fatal(err)
	}
	if v := tick(); v[tickApplied] != tickWindowsDue {
		t.Fatalf("tick with a window due: %v, want applied %d", v, tickWindowsDue)
	}
	if v, err := NewInspector(s).Values(ctx, q); err != nil || v["refill_size"] != 10 {
		t.Fatalf("after a tick that found a window due: %v %v, want refill_size 10 still", v, err)
	}
	w, err := s.applyWindows(ctx, ref)
	want := []SettingChange{{Field: "refill_size", Old: json.RawMessage("10"), New: json.RawMessage("40")}}
	if err != nil || w == nil || !w.Started || w.Ended || !w.At.Equal(start) || !slices.EqualFunc(w.StartChanges, want, sameChange) {
		t.Fatalf("windows.lua: %+v %v, want the window started with %v", w, err, want)
	}
	if w, err := s.applyWindows(ctx, ref); err != nil || w != nil {
		t.Fatalf("windows.lua again: %+v %v, want no change", w, err)
	}
	if v := tick(); v[tickApplied] != 1 || v[tickBudget] != 40 {
		t.Fatalf("tick after windows.lua: %v, want applied with the budget 40", v)
	}

	if _, _, err := NewInspector(s).SetSchedule(ctx, q, Schedule{}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Tick(ctx, q)
	want = []SettingChange{{Field: "refill_size", Old: json.RawMessage("40"), New: json.RawMessage("10")}}
	if err != nil || res.Applied || res.Window == nil || !res.Window.Ended || res.Window.Started ||
		!slices.EqualFunc(res.Window.EndChanges, want, sameChange) {
		t.Fatalf("Tick once the window is gone: %+v %v, want it ended with %v", res, err, want)
	}
	if res, err := s.Tick(ctx, q); err != nil || res.Window != nil {
		t.Fatalf("Tick again: %+v %v, want no change to the windows", res, err)
	}
}

func sameChange(a, b SettingChange) bool {
	return a.Field == b.Field && string(a.Old) == string(b.Old) && string(a.New) == string(b.New)
}
