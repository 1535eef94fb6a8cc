package queue

import (
	"testing"
	"time"
)

func TestPollAfter(t *testing.T) {
	base := Ticket{Status: Waiting, RefillSize: 10, RefillInterval: 5 * time.Second, UntilNextTick: 2 * time.Second, AbandonAfter: 2 * time.Minute}
	for _, tc := range []struct {
		position int64
		lo, hi   time.Duration
	}{
		{1, 2600 * time.Millisecond, 2600 * time.Millisecond},      // next tick + check period + slack
		{100, 2600 * time.Millisecond, 2600 * time.Millisecond},    // within 10 ticks: every tick
		{101, 6600 * time.Millisecond, 7600 * time.Millisecond},    // 10 ticks ahead: skip one interval, less jitter
		{1001, 42600 * time.Millisecond, 52600 * time.Millisecond}, // 100 ticks ahead: ETA/10, less jitter
		{1000000, 50600 * time.Millisecond, MaxPoll},               // far back: the cap, less jitter
	} {
		tk := base
		tk.Position = tc.position
		tk.TicksAhead = (tc.position - 1) / int64(base.RefillSize)
		for range 200 {
			if got := tk.PollAfter(); got < tc.lo || got > tc.hi {
				t.Fatalf("position %d: poll after %s, want within [%s, %s]", tc.position, got, tc.lo, tc.hi)
			}
		}
	}
	if got := (Ticket{Status: Entered}).PollAfter(); got != 0 {
		t.Errorf("entered: %s", got)
	}
	// Never past the cap, whatever the interval (an hour here) or the time
	// to an opening, nor past half the abandonment window.
	long := Ticket{Status: Waiting, Position: 1, RefillSize: 10, RefillInterval: time.Hour, UntilNextTick: 40 * time.Minute}
	if got := long.PollAfter(); got != MaxPoll {
		t.Errorf("an hour's interval: poll after %s, want the %s cap", got, MaxPoll)
	}
	long.AbandonAfter = 20 * time.Second
	if got := long.PollAfter(); got != 10*time.Second {
		t.Errorf("abandon after 20s: poll after %s, want 10s", got)
	}
}

// The poll policy's load for a line of a million (10 admitted per 5 s, the
// defaults): the status calls a second it asks for, which one small box
// must serve (docs/PERFORMANCE.md), and how late the slowest poller within
// the next ten ticks learns of its turn.
func TestPollPolicyLoad(t *testing.T) {
	const users = 1000000
	base := Ticket{Status: Waiting, RefillSize: 10, RefillInterval: 5 * time.Second, UntilNextTick: 2500 * time.Millisecond, AbandonAfter: 2 * time.Minute}
	rate := 0.0
	for p := int64(1); p <= users; p++ {
		tk := base
		tk.Position = p
		tk.TicksAhead = (p - 1) / 10
		rate += 1 / tk.PollAfter().Seconds()
	}
	t.Logf("a line of %d asks %.0f status calls a second", users, rate)
	if rate > 20000 {
		t.Errorf("a line of a million asks %.0f status calls a second; one box serves about 24,000", rate)
	}
	// Within the next ten ticks every poll comes right after a tick.
	for p := int64(1); p <= 100; p++ {
		tk := base
		tk.Position = p
		tk.TicksAhead = (p - 1) / 10
		if d := tk.PollAfter(); d > tk.UntilNextTick+time.Second {
			t.Fatalf("position %d polls %s after, beyond the next tick", p, d)
		}
	}
}

func TestTickPeriod(t *testing.T) {
	for _, tc := range []struct{ interval, want time.Duration }{
		{5 * time.Second, 500 * time.Millisecond}, // a tenth
		{time.Hour, time.Second},                  // at most a second
		{50 * time.Millisecond, 5 * time.Millisecond},
	} {
		if got := TickPeriod(tc.interval); got != tc.want {
			t.Errorf("TickPeriod(%s) = %s, want %s", tc.interval, got, tc.want)
		}
	}
}

// The first poll of a far-back place comes anywhere between the next tick
// and PollAfter's suggestion, evenly: a crowd that joined together polls
// spread over the interval from the start. Near the head it is PollAfter.
func TestFirstPollAfterSpreadsACrowd(t *testing.T) {
	far := Ticket{Status: Waiting, Position: 500000, TicksAhead: 49999, RefillSize: 10, RefillInterval: 5 * time.Second, UntilNextTick: 2 * time.Second, AbandonAfter: 2 * time.Minute}
	next := far.UntilNextTick + TickPeriod(far.RefillInterval) + 100*time.Millisecond
	// PollAfter's own suggestion is 48-60 s here (MaxPoll less up to a
	// fifth): below 48 s the first polls must fall evenly.
	const n, bins = 20000, 10
	low := MaxPoll * 4 / 5
	var count [bins]int
	for range n {
		d := far.FirstPollAfter()
		if d < next || d > MaxPoll {
			t.Fatalf("first poll after %s, want within [%s, %s]", d, next, MaxPoll)
		}
		if d < low {
			count[int(float64(d-next)/float64(low-next)*bins)]++
		}
	}
	want := float64(n) * float64(low-next) / float64(MaxPoll*9/10-next) / bins // PollAfter's mean: 54 s
	for i, c := range count {
		if float64(c) < want*0.85 || float64(c) > want*1.15 {
			t.Errorf("tenth %d of [%s, %s) holds %d first polls, want about %.0f: %v", i, next, low, c, want, count)
		}
	}
	near := far
	near.Position, near.TicksAhead = 30, 2
	for range 100 {
		if got, want := near.FirstPollAfter(), near.PollAfter(); got != want {
			t.Fatalf("near the head the first poll comes after %s, want PollAfter's %s", got, want)
		}
	}
	entered := Ticket{Status: Entered}
	if d := entered.FirstPollAfter(); d != 0 {
		t.Errorf("entered: first poll after %s, want 0", d)
	}
}
