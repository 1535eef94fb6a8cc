package forecast

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// TestForecastMatchesTheDrain: a line of 300 at 10 per 300 ms, ticked
// on the real clock; the forecast made before the first tick says when
// it drains within 10 % (and never on the early side by more).
func TestForecastMatchesTheDrain(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	q := fmt.Sprintf("fc%d", time.Now().UnixNano())
	s, err := queue.NewStore(rdb, []string{q}, queue.Settings{RefillSize: 10, RefillInterval: 300 * time.Millisecond, SessionTTL: time.Hour}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Seed(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tick(ctx, q); err != nil { // the first tick: empty, it starts the clock
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := s.Enter(ctx, q, fmt.Sprint("u", i)); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	res, err := Forecaster{Store: s}.Forecast(ctx, q, 10, "")
	if err != nil || res.DrainSeconds == nil || res.Waiting < 290 {
		t.Fatalf("forecast: %+v, %v", res, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := s.Tick(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if r.Applied && r.Waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the line did not drain")
		}
		time.Sleep(10 * time.Millisecond) // the tick's own period, as the scheduler calls it
	}
	measured := time.Since(start).Seconds()
	if got := float64(*res.DrainSeconds); math.Abs(got-measured) > 0.1*measured+1 {
		t.Fatalf("forecast drain %.0f s, measured %.1f s", got, measured)
	}
	t.Logf("forecast %d s, measured %.1f s, positions %v", *res.DrainSeconds, measured, res.ETAForPosition)
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
