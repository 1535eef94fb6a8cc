package forecast

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// TestForecastMatchesTheDrain: a line of 300 at 10 per 300 ms, ticked
// on the real clock; the forecast made before the first tick says when
// it drains within 10 %. The drain is counted in the line's own time,
// its ticks (drain.virtual): how late a loaded machine applied them is
// the machine's, not the forecast's.
func TestForecastMatchesTheDrain(t *testing.T) {
	ctx := context.Background()
	s, q := startedQueue(t, queue.Settings{RefillSize: 10, RefillInterval: 300 * time.Millisecond, SessionTTL: time.Hour})
	for i := range 300 {
		if _, err := s.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: fmt.Sprint("u", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Forecaster{Store: queue.NewInspector(s)}.Forecast(ctx, q, 10, "")
	if err != nil || res.DrainSeconds == nil || res.Waiting < 290 {
		t.Fatalf("forecast: %+v, %v", res, err)
	}
	d := drain(t, s, q, 300*time.Millisecond)
	measured := d.virtual().Seconds()
	if got := float64(*res.DrainSeconds); math.Abs(got-measured) > 0.1*measured+1 {
		t.Fatalf("forecast drain %.0f s, measured %.1f s (%s)", got, measured, d)
	}
	t.Logf("forecast %d s, measured %.1f s (%s), positions %v", *res.DrainSeconds, measured, d, res.ETAForPosition)
}

// TestForecastWindows: a paused window delays the drain by its length, a
// window's refill counts within it, abandonment speeds the line up and a
// lane counts its share.
func TestForecastWindows(t *testing.T) {
	now := time.Date(2026, 12, 24, 9, 0, 0, 0, time.UTC)
	base := Line{Waiting: 100, Interval: 5 * time.Second, SessionTTL: time.Hour, Share: 1, Now: now}
	plain := Of(base, 10)
	if *plain.DrainSeconds != 45 || plain.ETAForPosition[0] != [2]int64{1, 0} {
		t.Fatalf("plain: %+v", plain)
	}
	paused := true
	withPause := base
	withPause.Windows = []queue.Window{{Start: now.Add(10 * time.Second), End: now.Add(70 * time.Second), Paused: &paused}}
	if got := *Of(withPause, 10).DrainSeconds; got != 105 {
		t.Fatalf("with a minute paused: %d, want 105", got)
	}
	refill := 20
	faster := base
	faster.Windows = []queue.Window{{Start: now, End: now.Add(time.Hour), RefillSize: &refill}}
	if got := *Of(faster, 10).DrainSeconds; got != 20 {
		t.Fatalf("a window of 20 per tick: %d, want 20", got)
	}
	gone := base
	gone.Abandonment = 0.5
	if got := *Of(gone, 10).DrainSeconds; got != 20 {
		t.Fatalf("half abandoned: %d, want 20", got)
	}
	lane := base
	lane.Share = 0.3
	if got := *Of(lane, 10).DrainSeconds; got != 165 {
		t.Fatalf("a 30 %% lane: %d, want 165 (3 a tick)", got)
	}
	never := base
	never.Windows = []queue.Window{{Start: now, End: now.Add(1000 * time.Hour), Paused: &paused}}
	if r := Of(never, 10); r.DrainSeconds != nil && *r.DrainSeconds < 3600*999 {
		t.Fatalf("paused for 1,000 hours: %+v", r)
	}
}

// TestWaitMatchesATickByTickWalk: on generated lines, refills and
// schedules, the stretch-by-stretch wait is the tick-by-tick walk's.
func TestWaitMatchesATickByTickWalk(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	now := time.Date(2026, 12, 24, 9, 0, 0, 0, time.UTC)
	for range 300 {
		l := Line{Waiting: 1 + rng.Int64N(5000), Interval: time.Duration(1+rng.IntN(10)) * time.Second,
			UntilNextTick: time.Duration(rng.IntN(5000)) * time.Millisecond, SessionTTL: time.Duration(1+rng.IntN(20)) * time.Minute,
			MaxActive: rng.IntN(3) * rng.IntN(500), Share: []float64{1, 0.3, 0.7, 0.05}[rng.IntN(4)],
			Abandonment: []float64{0, 0.1, 0.5}[rng.IntN(3)], Now: now}
		at := now
		for range rng.IntN(5) {
			at = at.Add(time.Duration(rng.IntN(600)) * time.Second)
			w := queue.Window{Start: at, End: at.Add(time.Duration(1+rng.IntN(900)) * time.Second)}
			switch rng.IntN(3) {
			case 0:
				p := rng.IntN(2) == 0
				w.Paused = &p
			case 1:
				r := 1 + rng.IntN(50)
				w.RefillSize = &r
			default:
				m := rng.IntN(100)
				w.MaxActive = &m
			}
			l.Windows = append(l.Windows, w)
			at = w.End
		}
		refill := 1 + rng.IntN(40)
		for _, p := range positions(l.Waiting) {
			got, ok := l.wait(refill, p)
			want, wantOK := walk(l, refill, p)
			if got != want || ok != wantOK {
				t.Fatalf("%+v refill %d position %d: %d %v, the walk says %d %v", l, refill, p, got, ok, want, wantOK)
			}
		}
	}
}

// walk is the wait worked out one tick at a time, the reference.
func walk(l Line, refill int, p int64) (int64, bool) {
	t := l.Now.Add(l.UntilNextTick)
	gone := 0.0
	for range 2_000_000 {
		gone += l.rateAt(refill, t)
		if gone+1e-6 >= float64(p) {
			return int64(math.Ceil(t.Sub(l.Now).Seconds())), true
		}
		t = t.Add(l.Interval)
	}
	return 0, false
}

// TestForecastCostIsBounded: what one operator gets from calling the
// forecast again and again: the same few Redis commands whatever the
// line's length, and a walk bounded by the schedule's windows (at most
// queue.MaxWindows), not by how far the line reaches.
func TestForecastCostIsBounded(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	count := &redistest.Counter{}
	rdb.AddHook(count)
	q := fmt.Sprintf("fcost%d", time.Now().UnixNano())
	s, err := queue.NewStore(rdb, []string{q}, queue.Settings{RefillSize: 1, RefillInterval: time.Second, SessionTTL: time.Hour}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lanes := queue.Lanes{{Name: "priority", Share: 0.2}}
	if err := queue.NewInspector(s).UpdateSettings(ctx, q, queue.Update{Lanes: &lanes}); err != nil {
		t.Fatal(err)
	}
	// The most windows a schedule holds, each a day's pause, a year on.
	var sc queue.Schedule
	paused := true
	at := time.Now().Add(time.Hour)
	for range queue.MaxWindows {
		sc.Windows = append(sc.Windows, queue.Window{Start: at, End: at.Add(24 * time.Hour), Paused: &paused})
		at = at.Add(72 * time.Hour)
	}
	if _, _, err := queue.NewInspector(s).SetSchedule(ctx, q, sc); err != nil {
		t.Fatal(err)
	}
	f := Forecaster{Store: queue.NewInspector(s)}
	cost := func() int64 {
		before := count.N()
		res, err := f.Forecast(ctx, q, 1, "")
		if err != nil || res.DrainSeconds == nil {
			t.Fatalf("forecast: %+v, %v", res, err)
		}
		return count.N() - before
	}
	for i := range 10 {
		if _, err := s.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: fmt.Sprint("u", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	cost() // the first also reads which lanes there are, once
	short := cost()
	for i := range 2000 {
		if _, err := s.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: fmt.Sprint("v", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if long := cost(); long != short || long > 12 {
		t.Fatalf("a forecast costs %d Redis commands with 10 waiting, %d with 2,010; want the same few", short, long)
	}
	// The walk: 2,010 people at one a second across 100 windows of pause.
	start := time.Now()
	for range 100 {
		Of(Line{Waiting: 2010, Interval: time.Second, Share: 1, SessionTTL: time.Hour, Windows: sc.Windows, Now: time.Now()}, 1)
	}
	t.Logf("%d commands a forecast; 100 walks over %d windows took %v", short, len(sc.Windows), time.Since(start))
}

// TestForecastWithAbandonment: a line where 3 in 10 never come back (their
// pages closed), after a first crowd that showed the same: the forecast,
// which counts the abandonment of the last 10 minutes, says when the
// second crowd drains within 20 %, in the line's own time (its ticks).
//
// The other 7 in 10 must be heard within abandon_after or they are
// dropped too, and the line drains faster than forecast. Abandonment is
// judged on the clock, the drain in ticks: with abandon_after 1 s and
// ticks of 400 ms, a loaded machine's late polls dropped 132 live pages
// (forecast 12 s, measured 4.8 s). The line runs at a second a tick and
// abandon_after 2.5 s, the same 2.5 ticks, so a poll may be 2 s late;
// the pages are polled a few at a time, and the test fails, saying so,
// if one was dropped all the same.
func TestForecastWithAbandonment(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two crowds drained a tick a second, ~45 s; the whole suite runs it")
	}
	ctx := context.Background()
	const interval = time.Second
	s, q := startedQueue(t, queue.Settings{RefillSize: 7, RefillInterval: interval, SessionTTL: time.Hour, AbandonAfter: 2500 * time.Millisecond})
	// Pages that poll: the live members ask their status every 200 ms,
	// as a page near the head does, until they are admitted.
	var mu sync.Mutex
	live := map[string]bool{}
	pollCtx, stop := context.WithCancel(ctx)
	defer stop()
	var droppedLive []string // live pages the line dropped all the same
	pollers := make(chan struct{}, 16)
	go func() {
		for pollCtx.Err() == nil {
			mu.Lock()
			users := slices.Collect(maps.Keys(live))
			mu.Unlock()
			var wg sync.WaitGroup
			for _, u := range users {
				pollers <- struct{}{}
				wg.Go(func() {
					defer func() { <-pollers }()
					tk, err := s.Status(pollCtx, q, queue.Caller{User: u})
					if err == nil && tk.Status != queue.Waiting {
						mu.Lock()
						delete(live, u)
						if tk.Reason == queue.ReasonAbandoned {
							droppedLive = append(droppedLive, u)
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			select {
			case <-pollCtx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	crowd := func(name string, n int) {
		for i := range n {
			u := fmt.Sprint(name, i)
			if _, err := s.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: u}}); err != nil {
				t.Fatal(err)
			}
			if i%10 >= 3 { // 3 in 10 close the page at once
				mu.Lock()
				live[u] = true
				mu.Unlock()
			}
		}
	}
	crowd("first", 100)
	drain(t, s, q, interval)
	// The first crowd's abandoned places leave once their deadline
	// passes: wait until the history has counted them.
	wait.For(t, time.Minute, "the first crowd's abandonment in the history", func() (bool, string) {
		if _, err := s.Tick(ctx, q); err != nil {
			return false, err.Error()
		}
		o, err := queue.NewInspector(s).Overview(ctx, q)
		if err != nil {
			return false, err.Error()
		}
		// 27 of the 93 who waited (the first bucket let 7 in at once).
		return o.Abandonment() > 0.2, fmt.Sprint(o.Abandonment())
	})
	crowd("second", 300)
	res, err := Forecaster{Store: queue.NewInspector(s)}.Forecast(ctx, q, 7, "")
	if err != nil || res.DrainSeconds == nil {
		t.Fatalf("forecast: %+v, %v", res, err)
	}
	d := drain(t, s, q, interval)
	measured := d.virtual().Seconds()
	got := float64(*res.DrainSeconds)
	t.Logf("forecast %d s, measured %.1f s (%s)", *res.DrainSeconds, measured, d)
	mu.Lock()
	dropped := droppedLive
	mu.Unlock()
	if len(dropped) > 0 {
		t.Fatalf("%d pages that polled were dropped as abandoned (%v): not polled within abandon_after, the line was not the one forecast", len(dropped), dropped)
	}
	if math.Abs(got-measured) > 0.2*measured+1 {
		t.Fatalf("forecast drain %.0f s, measured %.1f s: more than 20 %% apart", got, measured)
	}
}

// startedQueue is a queue of its own with settings, its first tick
// applied (an empty one: it starts the clock).
func startedQueue(t *testing.T, settings queue.Settings) (*queue.Store, string) {
	t.Helper()
	ctx := context.Background()
	q := fmt.Sprintf("fc%d", time.Now().UnixNano())
	s, err := queue.NewStore(redistest.Client(t), []string{q}, settings, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := queue.NewInspector(s).Seed(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tick(ctx, q); err != nil {
		t.Fatal(err)
	}
	return s, q
}

// drained is how a line drained: the ticks that drained it, and how
// long it took on the real clock.
type drained struct {
	ticks    int
	interval time.Duration
	wall     time.Duration
}

// virtual is how long the drain took in the line's own time: its ticks,
// an interval each, whatever the machine's delay in applying them.
func (d drained) virtual() time.Duration { return time.Duration(d.ticks) * d.interval }

func (d drained) String() string {
	return fmt.Sprintf("%d ticks of %v; %.1f s on the clock", d.ticks, d.interval, d.wall.Seconds())
}

// drain ticks q on the real clock, at the scheduler's pace, until its
// line is empty, counting the ticks applied.
func drain(t *testing.T, s *queue.Store, q string, interval time.Duration) drained {
	t.Helper()
	ctx := context.Background()
	d := drained{interval: interval}
	start := time.Now()
	wait.For(t, 2*time.Minute, "the line to drain", func() (bool, string) {
		r, err := s.Tick(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if r.Applied {
			d.ticks++
		}
		return r.Applied && r.Waiting == 0, fmt.Sprintf("%d waiting after %d ticks", r.Waiting, d.ticks)
	})
	d.wall = time.Since(start)
	return d
}
