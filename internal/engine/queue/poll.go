package queue

import (
	"math/rand/v2"
	"time"
)

// MaxPoll caps the suggested polling interval. The load of a line is
// about its length over the typical interval: a million waiting at 30 s
// would ask 33,000 times a second, more than one small box serves (about
// 24,000 status calls a second, docs/PERFORMANCE.md); at 60 s, 17,000.
const MaxPoll = 60 * time.Second

// PollAfter suggests when a waiting user should ask again (0 unless
// Waiting). Anyone the next ten ticks may admit asks just after each tick
// (the scheduler applies it within one TickPeriod), so they learn of
// their turn within an interval. Further back a place moves little per
// tick, so the user skips a tenth of the intervals ahead (ETA/10), up to
// MaxPoll: nobody learns of the turn noticeably late, as the wait shrinks
// faster than the polls space out. The skipped part is shortened by up to
// a fifth at random, so a crowd that arrived together does not ask
// together. Never later than half the abandonment window, so a page that
// does as it is told is never taken for one that was closed.
func (t Ticket) PollAfter() time.Duration {
	if t.Status != Waiting {
		return 0
	}
	next := t.UntilNextTick + TickPeriod(t.RefillInterval) + 100*time.Millisecond
	d := next
	if skip := t.TicksAhead / 10; skip > 0 {
		extra := min(time.Duration(skip)*t.RefillInterval, MaxPoll)
		extra -= time.Duration(rand.Int64N(int64(extra)/5 + 1))
		d += extra
	}
	d = min(d, MaxPoll)
	if t.AbandonAfter > 0 {
		d = min(d, t.AbandonAfter/2)
	}
	return d
}

// FirstPollAfter is PollAfter for the answer that gives a place (enter).
// Far back it picks a uniformly random point between the next tick and
// what PollAfter suggests, so a crowd that joined within a minute (an
// opening, a sale announced by push message) polls evenly over the
// interval from its first poll on. PollAfter's own jitter is too small to
// do it (a few seconds a cycle, and the later polls keep the phase the
// first one gives): without this a crowd that joined in 40 s polls at a
// third above the line's mean rate for most of each minute, for many
// minutes. It only ever asks earlier than PollAfter.
func (t Ticket) FirstPollAfter() time.Duration {
	d := t.PollAfter()
	if t.Status != Waiting || t.TicksAhead/10 == 0 {
		return d
	}
	next := t.UntilNextTick + TickPeriod(t.RefillInterval) + 100*time.Millisecond
	if d <= next {
		return d
	}
	return next + time.Duration(rand.Int64N(int64(d-next)+1))
}
