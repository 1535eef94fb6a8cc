package queue

import (
	"math"
	"testing"
	"time"
)

// Candidate ETA estimators, measured against the current formula
// (Ticket.ETA) by TestETAAccuracy. Each turns the position into an
// effective position, the places that will really be consumed at the head
// before this user's turn, and then counts ticks exactly as newTicket
// does, so an estimator that sees nobody going gives the current ETA to
// the nanosecond.

// etaWindow is how many ended intervals an estimator looks back over.
const etaWindow = 20

// lineWindow sums the last etaWindow ended intervals of a queue, as
// enter.lua or status.lua could read them when a user asks.
type lineWindow struct {
	// admitted, dropped (abandoned places skipped at the head) and
	// exposure (the line's length at each interval's end, summed:
	// person-intervals of waiting) are in the history list today.
	admitted, dropped, exposure int64
	// left counts waiting places given up (leave.lua, reason "left"). The
	// store does not count them per interval today: it would need a
	// per-queue counter (tick HASH field, moved into the history entry by
	// each tick).
	left int64
}

// windowOf sums the last etaWindow points of history (oldest first) and
// the leaves that fall in the intervals they cover.
func windowOf(history []HistoryPoint, leaves []time.Time, interval time.Duration) lineWindow {
	var w lineWindow
	if len(history) == 0 {
		return w
	}
	history = history[max(0, len(history)-etaWindow):]
	for _, p := range history {
		w.admitted += p.Admitted
		w.dropped += p.Abandoned
		w.exposure += p.Waiting
	}
	from, to := history[0].At, history[len(history)-1].At.Add(interval)
	for _, at := range leaves {
		if !at.Before(from) && at.Before(to) {
			w.left++
		}
	}
	return w
}

// etaEstimator predicts the time until a waiting user's admission from
// the ticket and the window read at the same moment.
type etaEstimator struct {
	name string
	eta  func(tk Ticket, w lineWindow) time.Duration
}

// etaEstimators: the current formula first, then the candidates.
var etaEstimators = []etaEstimator{
	{"current", func(tk Ticket, _ lineWindow) time.Duration { return tk.ETA }},
	{"drops", etaDrops},
	{"departures", etaDepartures},
	{"hazard", etaHazard},
}

// etaDrops: the share f of the places reaching the head that were
// dropped as abandoned; the places ahead will be dropped in the same
// share, so the effective position is ⌈position × (1 − f)⌉. Needs only
// what the history records today.
func etaDrops(tk Ticket, w lineWindow) time.Duration {
	return etaFor(tk, shrink(tk.Position, share(w.dropped, w.admitted+w.dropped)))
}

// etaDepartures: as etaDrops, with the places that left counted among
// the departures: f = (dropped + left) / (admitted + dropped + left).
func etaDepartures(tk Ticket, w lineWindow) time.Duration {
	return etaFor(tk, shrink(tk.Position, share(w.dropped+w.left, w.admitted+w.dropped+w.left)))
}

// etaHazard: drops as etaDrops; leaves as a per-person hazard h = left /
// exposure per interval, so each place ahead may leave for as long as it
// still waits. With the head consuming R = refill_size places per
// interval and a place at p' leaving at rate h·p', dp'/dt = −R − h·p',
// which reaches the head after (1/h)·ln(1 + h·p'/R) intervals: the
// effective position is R/h · ln(1 + h·p'/R) (p' itself when h = 0).
func etaHazard(tk Ticket, w lineWindow) time.Duration {
	p := shrink(tk.Position, share(w.dropped, w.admitted+w.dropped))
	if w.left == 0 || w.exposure == 0 || tk.RefillSize <= 0 {
		return etaFor(tk, p)
	}
	h, r := float64(w.left)/float64(w.exposure), float64(tk.RefillSize)
	return etaFor(tk, max(1, int64(math.Ceil(r/h*math.Log1p(h*float64(p)/r)))))
}

// share is part / whole, 0 for an empty whole.
func share(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

// shrink is ⌈position × (1 − f)⌉, at least 1; exactly position when f = 0.
func shrink(position int64, f float64) int64 {
	return max(1, int64(math.Ceil(float64(position)*(1-f))))
}

// etaFor is newTicket's ETA for a waiting user at an effective position;
// the ticket's own ETA for anyone else (admitted at once, in a draw).
func etaFor(tk Ticket, place int64) time.Duration {
	if tk.Status != Waiting || tk.Position <= 0 || tk.RefillSize <= 0 {
		return tk.ETA
	}
	return tk.UntilNextTick + time.Duration((place-1)/int64(tk.RefillSize))*tk.RefillInterval
}

// The candidates are the current formula when nothing leaves the line,
// never later than it, and never later for a place further forward.
func TestETAEstimators(t *testing.T) {
	ticket := func(position int64, refill int) Ticket {
		tk, err := newTicket([]int64{1000, 120, 250, int64(refill), 3600000, 0, 0, 0, 0, 0, 0}, 2, position)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	for _, tc := range []struct {
		name  string
		w     lineWindow
		still bool // the window shows nobody going: every estimator is the current one
	}{
		{"empty history", lineWindow{}, true},
		{"admissions only", lineWindow{admitted: 200, exposure: 20000}, true},
		{"paused window", lineWindow{exposure: 20000}, true},
		{"drops", lineWindow{admitted: 180, dropped: 20, exposure: 20000}, false},
		{"leaves", lineWindow{admitted: 200, left: 20, exposure: 20000}, false},
		{"both", lineWindow{admitted: 150, dropped: 30, left: 40, exposure: 5000}, false},
		{"all dropped", lineWindow{dropped: 50, exposure: 5000}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, refill := range []int{1, 10, 15} {
				prev := make([]time.Duration, len(etaEstimators)) // at the place ahead
				for pos := int64(1); pos <= 3000; pos++ {
					tk := ticket(pos, refill)
					for i, e := range etaEstimators {
						got := e.eta(tk, tc.w)
						if tc.still && got != tk.ETA {
							t.Fatalf("%s, refill %d, position %d: %v, current formula %v", e.name, refill, pos, got, tk.ETA)
						}
						if got > tk.ETA || got < tk.UntilNextTick {
							t.Fatalf("%s, refill %d, position %d: %v outside [%v, %v]", e.name, refill, pos, got, tk.UntilNextTick, tk.ETA)
						}
						if got < prev[i] {
							t.Fatalf("%s, refill %d: position %d gets %v, one place ahead got %v", e.name, refill, pos, got, prev[i])
						}
						prev[i] = got
					}
				}
			}
		})
	}
	// A user admitted at once keeps the answer's ETA (zero).
	entered := Ticket{Status: Entered, RefillSize: 10, RefillInterval: time.Second}
	for _, e := range etaEstimators {
		if got := e.eta(entered, lineWindow{admitted: 1, dropped: 1, left: 1, exposure: 1}); got != 0 {
			t.Errorf("%s: an admitted user's ETA is %v", e.name, got)
		}
	}
}
