package queue

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisClock reads the Redis clock, which the scripts measure with.
func redisClock(t *testing.T, rdb *redis.Client) time.Time {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.Truncate(time.Millisecond)
}

// span is a moment known to lie between two readings of the Redis clock.
type span struct{ lo, hi time.Time }

// timed runs fn between two readings of the Redis clock.
func timed(t *testing.T, rdb *redis.Client, fn func()) span {
	t.Helper()
	lo := redisClock(t, rdb)
	fn()
	return span{lo, redisClock(t, rdb)}
}

// within fails unless got lies in [lo, hi].
func within(t *testing.T, what string, got, lo, hi time.Duration) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %v, want within [%v, %v]", what, got, lo, hi)
	}
}

// samplesOf returns the samples of kind, in the order given.
func samplesOf(all []Sample, kind SampleKind) []Sample {
	var of []Sample
	for _, s := range all {
		if s.Kind == kind {
			of = append(of, s)
		}
	}
	return of
}

// A controlled line: two direct admissions, four in the line, one more
// after the first tick; ticks move two at a time, one admission is done,
// the rest expire. Every count is exact, and every duration lies where the
// Redis clock readings around each step put it.
func TestLineStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const interval = time.Hour // ticks are forced: no tick is ever late
	s, q, rdb := newStore(t, Settings{RefillSize: 2, RefillInterval: interval, SessionTTL: time.Hour})
	k := keysFor(q)

	t0 := timed(t, rdb, func() { tick(t, s, rdb, q) })
	tickets := map[string]Ticket{}
	entries := timed(t, rdb, func() {
		for _, u := range []string{"a", "b", "c", "d", "e", "f"} {
			tickets[u] = enter(t, s, q, u)
		}
	})
	if tickets["b"].Status != Entered || tickets["c"].Status != Waiting || tickets["f"].Position != 4 {
		t.Fatalf("setup: %+v", tickets)
	}
	time.Sleep(20 * time.Millisecond) // so that the waits are not all 0

	// t1 closes the first interval (a and b entered directly: waited 0)
	// and moves c and d, who entered after the checkpoint of t0.
	var r1 TickResult
	t1 := timed(t, rdb, func() { r1 = tick(t, s, rdb, q) })
	if r1.Moved != 2 || r1.Admitted != 2 {
		t.Fatalf("t1: %+v", r1)
	}
	line := samplesOf(r1.Samples, TimeInLine)
	if len(line) != 2 || line[0] != (Sample{Kind: TimeInLine, Count: 2}) || line[1].Count != 2 {
		t.Fatalf("t1 time in line: %+v", line)
	}
	// From the middle of [t0, t1] to t1.
	within(t, "c's time in line", line[1].Value, t1.lo.Sub(t0.hi)/2-time.Millisecond, t1.hi.Sub(t0.lo)/2+time.Millisecond)
	// c and d were told the next tick, an interval after t0, would admit
	// them: it came at t1, far sooner.
	eta := samplesOf(r1.Samples, ETAError)
	if len(eta) != 1 || eta[0].Count != 2 {
		t.Fatalf("t1 ETA error: %+v", eta)
	}
	within(t, "c's ETA error", eta[0].Value, t1.lo.Sub(t0.hi)-interval, t1.hi.Sub(t0.lo)-interval)
	// The same from c's own page: admitted at AdmittedAt, where its
	// entry's answer (ETA) said entry + ETA.
	c := status(t, s, q, "c")
	if c.Status != Entered {
		t.Fatalf("c: %+v", c)
	}
	predicted := tickets["c"].ETA
	within(t, "c's ETA error, from its page", eta[0].Value, c.AdmittedAt.Sub(entries.hi)-predicted, c.AdmittedAt.Sub(entries.lo)-predicted)

	g := enter(t, s, q, "g") // third in line, behind e and f: the tick after next
	if g.Position != 3 || g.TicksAhead != 1 {
		t.Fatalf("g: %+v", g)
	}
	aStart := tickets["a"].AdmittedAt
	var ended bool
	done := timed(t, rdb, func() {
		var err error
		ended, err = s.Done(ctx, q, "a", aStart)
		if err != nil {
			t.Fatal(err)
		}
	})
	if !ended {
		t.Fatal("a's admission did not end")
	}

	// t2 moves e and f (entered before t1, places 3 and 4: one refill
	// more than c and d).
	var r2 TickResult
	t2 := timed(t, rdb, func() { r2 = tick(t, s, rdb, q) })
	line = samplesOf(r2.Samples, TimeInLine)
	if len(line) != 1 || line[0].Count != 2 {
		t.Fatalf("t2 time in line: %+v", line)
	}
	within(t, "e's time in line", line[0].Value, t2.lo.Sub(t0.hi.Add(t1.hi.Sub(t0.hi)/2))-time.Millisecond, t2.hi.Sub(t0.lo.Add(t1.lo.Sub(t0.lo)/2))+time.Millisecond)
	eta = samplesOf(r2.Samples, ETAError)
	if len(eta) != 1 || eta[0].Count != 2 {
		t.Fatalf("t2 ETA error: %+v", eta)
	}
	within(t, "e's ETA error", eta[0].Value, t2.lo.Sub(t0.hi)-2*interval, t2.hi.Sub(t0.lo)-2*interval)

	// Sessions of 20 ms: everyone admitted expires by t3, each inside for
	// exactly that long; g, covered by t1's checkpoint, moves in.
	if err := rdb.HSet(ctx, k.config, "session_ttl_ms", 20).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	var r3 TickResult
	t3 := timed(t, rdb, func() { r3 = tick(t, s, rdb, q) })
	if r3.Purged != 5 || r3.Moved != 1 {
		t.Fatalf("t3: %+v", r3)
	}
	if err := rdb.HSet(ctx, k.config, "session_ttl_ms", time.Hour.Milliseconds()).Err(); err != nil {
		t.Fatal(err)
	}
	if inside := samplesOf(r3.Samples, TimeInside); !slices.Equal(inside, []Sample{{Kind: TimeInside, Value: 20 * time.Millisecond, Count: 5}}) {
		t.Fatalf("t3 time inside: %+v", inside)
	}
	eta = samplesOf(r3.Samples, ETAError)
	if len(eta) != 1 || eta[0].Count != 1 {
		t.Fatalf("t3 ETA error: %+v", eta)
	}
	within(t, "g's ETA error", eta[0].Value, t3.lo.Sub(t1.hi)-2*interval, t3.hi.Sub(t1.lo)-2*interval)

	// The history counts who came, who went in, who was inside.
	hist, err := NewInspector(s).History(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var got [][3]int64
	for _, p := range hist {
		got = append(got, [3]int64{p.Arrivals, p.Admitted, p.Active})
	}
	// [t0,t1]: a..f came, a and b went in and are inside at t1;
	// [t1,t2]: g came, c and d went in, a is done; [t2,t3]: e and f went
	// in, and at t3 every session (of 20 ms by then) has ended.
	want := [][3]int64{{6, 2, 2}, {1, 2, 3}, {0, 2, 0}}
	if !slices.Equal(got, want) {
		t.Errorf("history (arrivals, admitted, active) = %v, want %v", got, want)
	}

	// The back office's figures for the last ten minutes.
	rep, err := NewInspector(s).LineReport(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	st := rep.Stats
	if st.TimeInLine.Count != 7 || st.ETAError.Count != 5 || st.TimeInside.Count != 6 {
		t.Errorf("counts: line %d, eta %d, inside %d; want 7, 5, 6", st.TimeInLine.Count, st.ETAError.Count, st.TimeInside.Count)
	}
	// a's time inside, rounded to two digits, beside five of 20 ms.
	aInside := done.hi.Sub(aStart)
	if st.TimeInside.P50 != 20*time.Millisecond || st.TimeInside.P90 < (done.lo.Sub(aStart))*95/100 || st.TimeInside.P90 > aInside*105/100 {
		t.Errorf("time inside %+v; a was inside about %v", st.TimeInside, aInside)
	}
	if st.Arrivals != 7 || st.Admitted != 6 || st.Abandoned != 0 || st.AbandonmentRate != 0 || st.Active != 1 {
		t.Errorf("stats %+v", st)
	}
	if st.ArrivalsPerMinute <= 0 || st.AdmissionsPerMinute <= 0 {
		t.Errorf("rates %+v", st)
	}
	// Only the checkpoint that covers the line's head (none waits: t3's)
	// is kept.
	if n, _ := rdb.ZCard(ctx, k.arrivals).Result(); n != 1 {
		t.Errorf("%d checkpoints kept, want 1", n)
	}
}

// The figures from fixed history and samples: percentiles by nearest
// rank over groups, rates over the span the intervals cover, the
// abandonment rate; intervals and samples before the window are left out.
func TestLineStatsFigures(t *testing.T) {
	now := time.UnixMilli(1_000_000_000)
	since := now.Add(-StatsWindow)
	o := Overview{Info: Info{Entered: 9, LastTickAt: now.Add(-time.Second), Now: now}}
	o.History = []HistoryPoint{
		{At: since.Add(-time.Minute), Admitted: 100, Abandoned: 100, Arrivals: 100}, // before the window
		{At: now.Add(-121 * time.Second), Admitted: 8, Abandoned: 2, Arrivals: 30},
		{At: now.Add(-61 * time.Second), Admitted: 12, Abandoned: 0, Arrivals: 10},
	}
	samples := []Sample{
		{TimeInLine, 10 * time.Second, 5, ""},
		{TimeInLine, 0, 4, ""},
		{TimeInLine, time.Minute, 1, ""},
		{ETAError, -time.Second, 1, ""},
	}
	st := lineStats(o, samples, since)
	want := LineStats{
		Window:              StatsWindow,
		TimeInLine:          Spread{Count: 10, P50: 10 * time.Second, P90: 10 * time.Second},
		ETAError:            Spread{Count: 1, P50: -time.Second, P90: -time.Second},
		Arrivals:            40,
		Admitted:            20,
		Abandoned:           2,
		AbandonmentRate:     2.0 / 22,
		ArrivalsPerMinute:   20,
		AdmissionsPerMinute: 10,
		Active:              9,
	}
	if st != want {
		t.Errorf("lineStats:\n got %+v\nwant %+v", st, want)
	}
	samples = append(samples, Sample{Kind: TimeInLine, Value: time.Minute, Count: 1})
	if sp := spread(samples, TimeInLine); sp.P90 != time.Minute || sp.Count != 11 {
		t.Errorf("with one more at a minute: %+v", sp)
	}
}

// Entries written before the line statistics (four fields, or three before
// abandonment) and before the budget (six) still read, the new fields as
// 0; fields a later version adds after these are ignored.
func TestHistoryEntryVersions(t *testing.T) {
	for entry, want := range map[string]HistoryPoint{
		"1000:5:7":            {At: time.UnixMilli(1000), Admitted: 5, Waiting: 7},
		"1000:5:7:1":          {At: time.UnixMilli(1000), Admitted: 5, Waiting: 7, Abandoned: 1},
		"1000:5:7:1:9:3":      {At: time.UnixMilli(1000), Admitted: 5, Waiting: 7, Abandoned: 1, Arrivals: 9, Active: 3},
		"1000:5:7:1:9:3:42":   {At: time.UnixMilli(1000), Admitted: 5, Waiting: 7, Abandoned: 1, Arrivals: 9, Active: 3, Refill: 42},
		"1000:5:7:1:9:3:42:8": {At: time.UnixMilli(1000), Admitted: 5, Waiting: 7, Abandoned: 1, Arrivals: 9, Active: 3, Refill: 42},
	} {
		got, err := parseHistoryEntry(entry)
		if err != nil || got != want {
			t.Errorf("parseHistoryEntry(%q) = %+v, %v; want %+v", entry, got, err, want)
		}
	}
	for _, bad := range []string{"", "1000:5", "1000:x:7", "1000:5:7:1:y"} {
		if _, err := parseHistoryEntry(bad); err == nil {
			t.Errorf("parseHistoryEntry(%q) read", bad)
		}
	}
}

// BenchmarkLineStatsMemory reports what the line statistics keep in Redis:
// bytes per checkpoint (one per applied tick, kept back to the head of the
// line) and per samples entry (at most SAMPLES_KEEP), from MEMORY USAGE
// with every element sampled. Nothing is kept per waiting user.
func BenchmarkLineStatsMemory(b *testing.B) {
	_, q, rdb := benchStore(b, benchSettings)
	ctx := context.Background()
	k := keysFor(q)
	const n = 10000
	now := time.Now().UnixMilli()
	for b.Loop() {
		rdb.Del(ctx, k.arrivals, k.samples)
		for i := range n {
			rdb.ZAdd(ctx, k.arrivals, redis.Z{Score: float64(i * 137), Member: fmt.Sprintf("%d:%d:%d:%d", now+int64(i)*5000, 250000-i*10, 100, 5000)})
			rdb.RPush(ctx, k.samples, fmt.Sprintf("%d:%d:%d:%d", now+int64(i)*5000, 1+i%3, 61000+i, 50))
		}
	}
	for _, m := range []struct{ key, unit string }{{k.arrivals, "bytes/checkpoint"}, {k.samples, "bytes/sample"}} {
		used, err := rdb.MemoryUsage(ctx, m.key, 0).Result()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(used)/n, m.unit)
	}
}
