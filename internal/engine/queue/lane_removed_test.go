package queue

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// How a lane goes away, in TestLaneRemovedKeepsItsShare.
const (
	removedByPatch       = iota // an operator's PATCH of the lanes
	removedByWindowStart        // a window starts whose lanes leave it out
	removedByWindowEnd          // a window that brought it ends
)

// TestLaneRemovedKeepsItsShare checks, on generated lanes, refills,
// backlogs and removal times, against a real Redis, that a lane that goes
// away (by a PATCH, by a window's start or by its end) keeps being served
// at the share it had, so its people keep their arrival order against
// the others: after the removal, while every other line stays busy and
// the removed one still holds people, the removed lane's admissions over
// any run of ticks are its share of their refills within the one-place
// bound TestLaneShares documents (two when the general lane's part
// leaves no room for the lanes' fractions to come due together); its
// line is served first in, first out; and once empty it is forgotten.
func TestLaneRemovedKeepsItsShare(t *testing.T) {
	ctx := context.Background()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	for trial := range 9 {
		refill := 2 + rng.IntN(10)
		s, q, rdb := newStore(t, Settings{RefillSize: refill, RefillInterval: time.Hour, SessionTTL: time.Hour})
		var ls Lanes
		left := 1.0
		for i := range 1 + rng.IntN(3) {
			share := math.Round((0.05+rng.Float64()*0.5)*100) / 100
			if share > left-0.05 {
				break
			}
			left -= share
			ls = append(ls, Lane{Name: fmt.Sprintf("l%d", i), Share: share})
		}
		if len(ls) == 0 {
			ls = Lanes{{Name: "l0", Share: 0.3}}
			left = 0.7
		}
		gone := ls[rng.IntN(len(ls))]
		rest := slices.DeleteFunc(slices.Clone(ls), func(l Lane) bool { return l.Name == gone.Name })
		how := trial % 3
		desc := fmt.Sprintf("trial %d (lanes %v, refill %d, %q removed by %d)", trial, ls, refill, gone.Name, how)

		// The lanes in force before the removal.
		window := func(lanes Lanes) Schedule {
			start := time.Now().Add(-time.Second).Truncate(time.Millisecond)
			return Schedule{Windows: []Window{{Start: start, End: start.Add(time.Hour), Lanes: &lanes}}}
		}
		if how == removedByWindowEnd {
			setLanes(t, s, q, rest)
			if _, _, err := NewInspector(s).SetSchedule(ctx, q, window(ls)); err != nil {
				t.Fatal(err)
			}
			tick(t, s, rdb, q) // the window starts: every lane
		} else {
			setLanes(t, s, q, ls)
		}

		lines := map[string]*laneModel{"": {name: ""}}
		for _, l := range ls {
			lines[l.Name] = &laneModel{name: l.Name, share: l.Share}
		}
		arrive := func(m *laneModel, n int) {
			for range n {
				m.next++
				u := fmt.Sprintf("u%d", m.next)
				if m.name != "" {
					u = LaneMember(m.name, u)
				}
				if tk := enter(t, s, q, u); tk.Status == Waiting {
					m.waiting = append(m.waiting, u)
				} else if tk.Status != Entered {
					t.Fatalf("%s: enter %s: %+v", desc, u, tk)
				}
			}
		}
		// keepBusy gives every line but skip more than a refill waiting.
		keepBusy := func(skip string) {
			for name, m := range lines {
				if name != skip && len(m.waiting) <= refill {
					arrive(m, refill+1-len(m.waiting)+rng.IntN(refill))
				}
			}
		}
		// step ticks and returns what each line moved, checking FIFO.
		step := func() map[string]int {
			res := tick(t, s, rdb, q)
			moved := map[string]int{"": int(res.Moved)}
			for _, lt := range res.Lanes {
				moved[lt.Lane] = int(lt.Moved)
				moved[""] -= int(lt.Moved)
			}
			for name, m := range lines {
				k := moved[name]
				if k > len(m.waiting) {
					t.Fatalf("%s: lane %q moved %d of %d", desc, name, k, len(m.waiting))
				}
				if k > 0 && status(t, s, q, m.waiting[k-1]).Status != Entered {
					t.Fatalf("%s: lane %q: %s not admitted", desc, name, m.waiting[k-1])
				}
				m.waiting = m.waiting[k:]
			}
			return moved
		}

		// Busy for a while, then a backlog in the lane about to go.
		for range 1 + rng.IntN(5) {
			keepBusy("")
			step()
		}
		keepBusy("")
		arrive(lines[gone.Name], 1+rng.IntN(4*refill))

		switch how {
		case removedByPatch:
			setLanes(t, s, q, rest)
		case removedByWindowStart:
			if _, _, err := NewInspector(s).SetSchedule(ctx, q, window(rest)); err != nil {
				t.Fatal(err)
			}
		case removedByWindowEnd:
			if _, _, err := NewInspector(s).SetSchedule(ctx, q, Schedule{}); err != nil {
				t.Fatal(err)
			}
		}

		// Everyone else stays busy; the removed lane only drains.
		x := lines[gone.Name]
		after := &laneModel{name: gone.Name, share: gone.Share}
		for i := 0; i < 60 && len(x.waiting) > 0; i++ {
			keepBusy(gone.Name)
			k := step()[gone.Name]
			if len(x.waiting) > 0 { // still held people: it got all it was given
				after.got = append(after.got, int64(k))
			}
		}
		if len(after.got) == 0 {
			continue
		}
		slack := float64(refill)*left+1e-9 >= float64(len(ls)-1)
		bound := 1.0
		if !slack {
			bound = 2
		}
		t.Run(desc, func(t *testing.T) { checkWindows(t, after, refill, bound) })
		if len(x.waiting) == 0 {
			tick(t, s, rdb, q)
			if in, err := rdb.SIsMember(ctx, keysFor(q).lanes, gone.Name).Result(); err != nil || in {
				t.Fatalf("%s: the removed lane, empty, is still in the lanes SET (%v)", desc, err)
			}
			if n, err := rdb.HExists(ctx, keysFor(q).tick, "share:"+gone.Name).Result(); err != nil || n {
				t.Fatalf("%s: the removed lane, empty, still has its share remembered (%v)", desc, err)
			}
		}
	}
}

// TestLaneRemovedBeforeNewLanes: lanes configured in a removed lane's
// place that would take more than it leaves give way, in proportion,
// until it is empty: the removed lane keeps its share, the new lanes
// share the rest, then get theirs.
func TestLaneRemovedBeforeNewLanes(t *testing.T) {
	s, q, rdb := newStore(t, Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour})
	setLanes(t, s, q, Lanes{{Name: "a", Share: 0.6}})
	for i := range 10 { // the first bucket admits these directly
		enter(t, s, q, fmt.Sprint("g", i))
	}
	for i := range 24 {
		enter(t, s, q, LaneMember("a", fmt.Sprint(i)))
		enter(t, s, q, fmt.Sprint("h", i))
	}
	setLanes(t, s, q, Lanes{{Name: "b", Share: 0.8}})
	for i := range 40 {
		enter(t, s, q, LaneMember("b", fmt.Sprint(i)))
	}
	moved := func(res TickResult, lane string) int64 {
		for _, lt := range res.Lanes {
			if lt.Lane == lane {
				return lt.Moved
			}
		}
		return 0
	}
	// The lines as the back office and the forecast see them.
	ls, err := NewInspector(s).Lines(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	shares := map[string]float64{}
	for _, l := range ls {
		shares[l.Lane] = math.Round(l.Share*100) / 100
	}
	if shares[""] != 0 || shares["a"] != 0.6 || shares["b"] != 0.4 {
		t.Fatalf("lines' shares %v, want a 0.6, b 0.4, the general lane none", shares)
	}
	for i := range 4 { // a: 24 people at 6 a tick
		res := tick(t, s, rdb, q)
		if a, b := moved(res, "a"), moved(res, "b"); a != 6 || b != 4 || res.Moved != 10 {
			t.Fatalf("tick %d: a %d, b %d, all %d; want a its 6 of 10, b the 4 left", i, a, b, res.Moved)
		}
	}
	res := tick(t, s, rdb, q) // a empty: b its 8, the general lane 2
	if b := moved(res, "b"); b != 8 || res.Moved != 10 {
		t.Fatalf("after a: b %d of %d, want 8 of 10", b, res.Moved)
	}
}
