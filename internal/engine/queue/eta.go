package queue

import (
	"math"
	"time"
)

// The wait as a range. Ticket.ETA counts the ticks ahead as if every place
// ahead will be admitted and every tick will come on time, so it errs both
// ways: people ahead leave or are dropped as abandoned, and the user is let
// in sooner; each tick may come a little late, and the lateness carries
// over to the ticks after it. The range says how much, from
// what TestETAAccuracy measured (docs/PERFORMANCE.md, "The wait as a
// range"):
//
//	high = ETA + (ticks ahead + 1) × etaTickLate + E intervals
//	low  = ETA − (⌈etaSpreadShare × ticks ahead⌉ + E) intervals, at least 0
//
// etaTickLate is the lateness one tick adds: measured at 0.7–3 ms
// under -race on a quiet machine, and the 2,000-user run on a loaded
// two-core one about 6.5 ms; 10 ms a tick is a second and a half over a
// 15-minute wait at the default 5 s interval. The ETA alone broke its
// promise ("never admitted more than one interval after it") on the loaded
// machine, 200 ticks back; the range's top keeps it.
//
// etaSpreadShare is how much of the ticks ahead the line may save by
// people going before it reaches them. The current formula's early error
// grows with the ticks ahead at the share of the line that goes: where one
// place in five is abandoned (the "abandoned" run), −37 intervals for the
// last of 2,000 users, 200 ticks back (0.19 a tick); with nobody going it
// stays within a tenth of an interval. A quarter covers a line where one
// in five goes, with room for its noise; on the page a wait of 15 minutes
// at the defaults reads "about 11–15 min".
//
// E widens both ends where the position is itself an estimate (Estimated,
// far back: snapshot.go): the ticks etaEstimateError of the position makes
// (⌈etaEstimateError × position / refill_size⌉). TestSnapshotPositionError
// measured a relative error of at most 4 % (p90 1.3 %) just beyond the
// near-head zone, less further back, and asserts a p90 under 5 %.
const (
	etaSpreadShare   = 0.25
	etaTickLate      = 10 * time.Millisecond
	etaEstimateError = 0.05
)

// setRange sets t.ETALow and t.ETAHigh from its ETA, as above. Only a
// waiting place in a moving line has a range; anyone else's ends are the
// ETA itself (0 for an admitted user, the draw's time in a draw).
func (t *Ticket) setRange() {
	t.ETALow, t.ETAHigh = t.ETA, t.ETA
	if t.Status != Waiting || t.Position <= 0 || t.RefillSize <= 0 || t.RefillInterval <= 0 {
		return
	}
	var e int64 // the estimate's error, in ticks
	if t.Estimated {
		e = int64(math.Ceil(etaEstimateError * float64(t.Position) / float64(t.RefillSize)))
	}
	early := int64(math.Ceil(etaSpreadShare*float64(t.TicksAhead))) + e
	t.ETAHigh = t.ETA + time.Duration(t.TicksAhead+1)*etaTickLate + time.Duration(e)*t.RefillInterval
	t.ETALow = max(0, t.ETA-time.Duration(early)*t.RefillInterval)
}
