package queue

import (
	"math"
	"time"
)

// The wait as a range. Ticket.ETA counts the ticks ahead as if every place
// ahead will be admitted, so it errs in one direction: people ahead leave
// or are dropped as abandoned, and the user is let in sooner. The range
// says how much sooner is likely, and keeps the ETA's promise at its top.
//
//	high = ETA + (1 + E) intervals
//	low  = ETA − (⌈etaSpreadShare × ticks ahead⌉ + 1 + E) intervals, at least 0
//
// One interval on each side is the tick's own timing: the admitting tick
// may come a little late (issue 20: lateness carries over, about a
// millisecond a tick), and the answer was computed a round trip before the
// user read it. TestETAAccuracy's promise is "never admitted more than one
// interval after the ETA", so nobody is admitted after high.
//
// etaSpreadShare is the share of the places ahead that go before the line
// reaches them. It comes from TestETAAccuracy's observed errors
// (docs/PERFORMANCE.md, "The wait as a range"): where one place in five
// goes (the "abandoned" and "disturbed" runs: 20 % of the crowd), the
// current formula's early error grows by about 0.19 intervals per tick
// ahead (−37 intervals for the last of 2,000 users, 200 ticks back); with
// nobody leaving it stays within a fifth of an interval. A fifth of the
// ticks ahead covers a line where one in five goes; on the page a wait of
// 15 minutes reads "about 11–16 min".
//
// E widens both ends where the position is itself an estimate (Estimated,
// far back: snapshot.go): the ticks etaEstimateError of the position makes
// (⌈etaEstimateError × position / refill_size⌉). TestSnapshotPositionError
// measured a relative error of at most 4 % (p90 1.3 %) just beyond the
// near-head zone, less further back, and asserts a p90 under 5 %.
const (
	etaSpreadShare   = 0.2
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
	slack := int64(1)
	if t.Estimated {
		slack += int64(math.Ceil(etaEstimateError * float64(t.Position) / float64(t.RefillSize)))
	}
	early := int64(math.Ceil(etaSpreadShare*float64(t.TicksAhead))) + slack
	t.ETAHigh = t.ETA + time.Duration(slack)*t.RefillInterval
	t.ETALow = max(0, t.ETA-time.Duration(early)*t.RefillInterval)
}
