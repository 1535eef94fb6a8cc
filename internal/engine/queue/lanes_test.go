package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// setLanes stores lanes as the queue's (as PATCH does).
func setLanes(t *testing.T, s *Store, q string, ls Lanes) {
	t.Helper()
	if err := NewInspector(s).UpdateSettings(context.Background(), q, Update{Lanes: &ls}); err != nil {
		t.Fatal(err)
	}
}

// laneModel is the test's own account of one line: the members waiting in
// it, in arrival order.
type laneModel struct {
	name    string
	share   float64
	waiting []string
	next    int
	got     []int64 // moved by each tick
}

// TestLaneShares checks the lanes' rules on generated lanes, refills and
// arrival patterns, tick by tick against a real Redis:
//   - work conservation: every tick admits min(refill, everyone waiting);
//   - FIFO within each lane: a lane's admitted are its first arrivals;
//   - shares: over any run of consecutive ticks at which every line had
//     more than a refill waiting, each lane got its share of those ticks'
//     refills within one place, and the general lane, the rest, within
//     as many places as there are lanes (one with one lane); when the
//     general lane's part of a refill is less than the lanes less one, a
//     lane may wait a tick for its place (two).
func TestLaneShares(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	for trial := range 12 {
		refill := 1 + rng.IntN(12)
		s, q, rdb := newStore(t, Settings{RefillSize: refill, RefillInterval: time.Hour, SessionTTL: time.Hour})
		var ls Lanes
		left := 1.0
		for i := range 1 + rng.IntN(3) {
			share := math.Round((0.05+rng.Float64()*0.5)*100) / 100
			if rng.IntN(5) == 0 || share > left {
				share = math.Round(left*100) / 100 // the lanes take everything: the general lane gets only what they leave
			}
			if share <= 0 {
				break
			}
			left -= share
			ls = append(ls, Lane{Name: fmt.Sprintf("l%d", i), Share: share})
		}
		setLanes(t, s, q, ls)
		lines := []*laneModel{{name: "", share: ls.Share("")}}
		for _, l := range ls {
			lines = append(lines, &laneModel{name: l.Name, share: l.Share})
		}
		busy := rng.IntN(2) == 0 // every line always backlogged, or arrivals at random
		for range 40 {
			for _, m := range lines {
				n := rng.IntN(2 * refill)
				for i := 0; i < n || busy && len(m.waiting) <= refill; i++ {
					m.next++
					u := fmt.Sprintf("u%d", m.next)
					if m.name != "" {
						u = LaneMember(m.name, u)
					}
					if tk := enter(t, s, q, u); tk.Status == Waiting {
						m.waiting = append(m.waiting, u)
					} else if tk.Status != Entered {
						t.Fatalf("enter %s: %+v", u, tk)
					}
				}
			}
			total := 0
			for _, m := range lines {
				total += len(m.waiting)
			}
			res := tick(t, s, rdb, q)
			if want := min(refill, total); res.Moved != int64(want) {
				t.Fatalf("trial %d (lanes %v, refill %d): moved %d of %d waiting, want %d", trial, ls, refill, res.Moved, total, want)
			}
			moved := map[string]int64{"": res.Moved}
			for _, lt := range res.Lanes {
				moved[lt.Lane] = lt.Moved
				moved[""] -= lt.Moved
			}
			for _, m := range lines {
				k := int(moved[m.name])
				if k > len(m.waiting) {
					t.Fatalf("lane %q moved %d of %d", m.name, k, len(m.waiting))
				}
				// FIFO: the first k are in, the next one is first in line.
				if k > 0 && status(t, s, q, m.waiting[k-1]).Status != Entered {
					t.Fatalf("lane %q: %s not admitted", m.name, m.waiting[k-1])
				}
				if k < len(m.waiting) {
					if tk := status(t, s, q, m.waiting[k]); tk.Status != Waiting || tk.Position != 1 {
						t.Fatalf("lane %q: %s after the tick: %+v, want first in its lane", m.name, m.waiting[k], tk)
					}
				}
				m.waiting = m.waiting[k:]
				m.got = append(m.got, int64(k))
			}
		}
		if busy {
			// The lanes' whole places fit every interval when the general
			// lane's part leaves room for their fractions to come due
			// together; else one may wait a tick (tick_lines.lua, split).
			slack := float64(refill)*left+1e-9 >= float64(len(ls)-1)
			for _, m := range lines {
				bound := 1.0
				switch {
				case m.name == "" && slack:
					bound = float64(len(ls))
				case m.name == "":
					bound = float64(len(ls) + 1)
				case !slack:
					bound = 2
				}
				checkWindows(t, m, refill, bound)
			}
		}
	}
}

// checkWindows checks every run of consecutive ticks of a line always
// backlogged: it got its share of the refills within bound places.
func checkWindows(t *testing.T, m *laneModel, refill int, bound float64) {
	t.Helper()
	for i := range m.got {
		sum := int64(0)
		for j := i; j < len(m.got); j++ {
			sum += m.got[j]
			want := m.share * float64(refill*(j-i+1))
			if math.Abs(float64(sum)-want) >= bound+1e-9 && !(bound == 1 && math.Abs(float64(sum)-want) < 1+1e-9) {
				t.Fatalf("lane %q (share %g, refill %d): ticks %d-%d got %d, share %.2f", m.name, m.share, refill, i, j, sum, want)
			}
		}
	}
}

// TestLanePlaces: a lane's place counts its own line (position, waiting,
// ETA from the lane's rate), leaving and entering again stay in the lane,
// a lane removed keeps its places until they are served, and a join for
// a lane the queue does not have is refused.
func TestLanePlaces(t *testing.T) {
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour})
	setLanes(t, s, q, Lanes{{Name: "priority", Share: 0.3}})
	for i := range 12 { // the first 10 enter directly on the first bucket
		enter(t, s, q, fmt.Sprintf("g%d", i))
	}
	for i := range 5 {
		enter(t, s, q, LaneMember("priority", fmt.Sprint(i)))
	}
	tk := status(t, s, q, LaneMember("priority", "4"))
	if tk.Status != Waiting || tk.Position != 5 || tk.Waiting != 5 {
		t.Fatalf("priority place: %+v, want 5th of 5 in its lane", tk)
	}
	if g := status(t, s, q, "g11"); g.Position != 2 || g.Waiting != 2 {
		t.Fatalf("general place: %+v, want 2nd of 2", g)
	}
	res := tick(t, s, rdb, q)
	if res.Moved != 7 || len(res.Lanes) != 1 || res.Lanes[0].Moved != 5 {
		t.Fatalf("tick: %+v, want 2 general and all 5 priority (the general lane had only 2)", res)
	}
	// The rates the tick left: with 3 of 10 reserved, a priority place
	// is told 3 an interval once its lane is busy.
	for i := range 40 {
		enter(t, s, q, LaneMember("priority", fmt.Sprint("b", i)))
		enter(t, s, q, fmt.Sprint("h", i))
	}
	tick(t, s, rdb, q)
	p := status(t, s, q, LaneMember("priority", "b39"))
	if p.RefillSize != 3 {
		t.Fatalf("priority rate %d, want 3: %+v", p.RefillSize, p)
	}
	if g := status(t, s, q, "h39"); g.RefillSize != 7 {
		t.Fatalf("general rate %d, want 7", g.RefillSize)
	}
	// The queue's waiting counts every line, and each lane has its own
	// history and time in line.
	if info, err := s.Info(ctx, q); err != nil || info.Waiting != p.Waiting+status(t, s, q, "h39").Waiting {
		t.Fatalf("info waiting %d (%v), want the lanes' and the general lane's", info.Waiting, err)
	}
	rep, err := NewInspector(s).LineReport(ctx, q)
	if err != nil || len(rep.Lanes) != 1 || rep.Lanes[0].Lane != "priority" || len(rep.Lanes[0].History) == 0 || rep.Lanes[0].TimeInLine.Count == 0 {
		t.Fatalf("lane report: %+v, %v", rep.Lanes, err)
	}
	// Entering again goes to the back of the lane.
	again := enter(t, s, q, LaneMember("priority", "b5"))
	if again.Position != p.Position {
		t.Fatalf("again: %+v, want the back of the lane (%d)", again, p.Position)
	}
	// Removed, the lane keeps its places and is served at its share
	// until it is empty (TestLaneRemovedKeepsItsShare).
	setLanes(t, s, q, nil)
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: LaneMember("priority", "new")}, Join: true}); !errors.Is(err, ErrUnknownLane) {
		t.Fatalf("join a lane removed: %v, want ErrUnknownLane", err)
	}
	// Nor does entering again: a place in it stays where it is.
	before := status(t, s, q, LaneMember("priority", "b7"))
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: LaneMember("priority", "b7")}}); !errors.Is(err, ErrUnknownLane) {
		t.Fatalf("enter a lane removed again: %v, want ErrUnknownLane", err)
	}
	if after := status(t, s, q, LaneMember("priority", "b7")); after.Position != before.Position {
		t.Fatalf("a refused enter moved the place: %d, was %d", after.Position, before.Position)
	}
	for range 20 {
		tick(t, s, rdb, q)
	}
	if tk := status(t, s, q, LaneMember("priority", "b5")); tk.Status != Entered {
		t.Fatalf("a removed lane's place: %+v, want served", tk)
	}
	if n, err := rdb.SCard(ctx, keysFor(q).lanes).Result(); err != nil || n != 0 {
		t.Fatalf("lanes SET holds %d (%v), want the removed, empty lane forgotten", n, err)
	}
	// With the lane back, a join through it works.
	setLanes(t, s, q, Lanes{{Name: "priority", Share: 0.3}})
	if tk, err := s.Enter(ctx, q, Entry{Caller: Caller{User: LaneMember("priority", "new")}, Join: true}); err != nil || tk.Status == NotWaiting {
		t.Fatalf("join: %+v, %v", tk, err)
	}
}

// TestLanesValidate: the lanes setting's rules.
func TestLanesValidate(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{`[]`, true},
		{`[{"name":"priority","share":0.3}]`, true},
		{`[{"name":"a","share":0.5},{"name":"b","share":0.5}]`, true},
		{`[{"name":"a","share":0.7},{"name":"b","share":0.4}]`, false},
		{`[{"name":"a","share":0}]`, false},
		{`[{"name":"a","share":1.2}]`, false},
		{`[{"name":"A","share":0.1}]`, false},
		{`[{"name":"","share":0.1}]`, false},
		{`[{"name":"a","share":0.1},{"name":"a","share":0.1}]`, false},
		{`[{"name":"a","share":0.1,"x":1}]`, false},
		{`{"name":"a"}`, false},
		{`[{"name":"a-very-long-name-that-is-over-32-chars","share":0.1}]`, false},
	} {
		_, err := ParseLanes(c.in)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", c.in, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidLanes) {
			t.Errorf("%s: %v is not ErrInvalidLanes", c.in, err)
		}
	}
	for _, m := range []string{"a:x", "u:l:x", LaneMember("p", "x:y"), "l:BAD:x", "l:p"} {
		want := map[string]string{LaneMember("p", "x:y"): "p"}[m]
		if got := LaneOf(m); got != want {
			t.Errorf("LaneOf(%q) = %q, want %q", m, got, want)
		}
	}
}
