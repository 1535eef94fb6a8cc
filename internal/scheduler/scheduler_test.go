package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// Three replicas, started at different moments, each run the scheduler
// against one Redis: every interval is ticked exactly once, and no interval
// admits more than the refill size.
func TestThreeReplicasTickOncePerInterval(t *testing.T) {
	const (
		interval = 200 * time.Millisecond
		refill   = 5
		users    = 400
		want     = 8 // ended intervals to observe
	)
	rdb := redistest.Client(t)
	name := fmt.Sprintf("sched%d", time.Now().UnixNano())
	settings := queue.Settings{RefillSize: refill, RefillInterval: interval, SessionTTL: time.Hour}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	newReplica := func() *queue.Store {
		s, err := queue.NewStore(rdb, []string{name}, settings, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	store := newReplica()
	for i := 0; i < users; i++ {
		if _, err := store.Enter(ctx, name, fmt.Sprintf("u%d", i)); err != nil {
			t.Fatal(err)
		}
	}

	for r := 0; r < 3; r++ {
		s, err := Start(newReplica(), Period(interval), log, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := s.Stop(); err != nil {
				t.Error(err)
			}
		})
		time.Sleep(interval/3 + 7*time.Millisecond) // stagger the replicas' timers
	}

	var points []queue.HistoryPoint
	deadline := time.Now().Add(30 * time.Second)
	for len(points) < want {
		if time.Now().After(deadline) {
			t.Fatalf("only %d intervals ended in 30s", len(points))
		}
		time.Sleep(interval / 2)
		var err error
		if points, err = store.History(ctx, name); err != nil {
			t.Fatal(err)
		}
	}

	seen := map[int64]bool{}
	for _, p := range points {
		iv := p.At.UnixMilli() / interval.Milliseconds()
		if seen[iv] {
			t.Fatalf("interval %d ticked twice: %+v", iv, points)
		}
		seen[iv] = true
		if p.Admitted > refill {
			t.Fatalf("interval %d admitted %d > %d", iv, p.Admitted, refill)
		}
	}
	// The first point is the initial bucket; after it every interval moved
	// a full refill from the long line.
	for _, p := range points[1:] {
		if p.Admitted != refill {
			t.Fatalf("an interval admitted %d with a long line waiting, want %d: %+v", p.Admitted, refill, points)
		}
	}
}

func TestPeriod(t *testing.T) {
	for _, tc := range []struct{ interval, want time.Duration }{
		{5 * time.Second, 500 * time.Millisecond},
		{time.Minute, time.Second},
		{100 * time.Millisecond, 10 * time.Millisecond},
	} {
		if got := Period(tc.interval); got != tc.want {
			t.Errorf("Period(%s) = %s, want %s", tc.interval, got, tc.want)
		}
	}
}

// tickLog records what a scheduler tells its Observer.
type tickLog struct {
	mu      sync.Mutex
	applied []queue.TickResult
	skipped int
	errs    []error
	queues  map[string]bool
}

func (l *tickLog) Tick(q string, res queue.TickResult, took time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queues[q] = true
	switch {
	case err != nil:
		l.errs = append(l.errs, err)
	case res.Applied:
		l.applied = append(l.applied, res)
	default:
		l.skipped++
	}
	if took <= 0 {
		l.errs = append(l.errs, errors.New("a tick call took no time"))
	}
}

// The observer hears every call: each applied tick once (as many as the
// history holds), the other calls of each interval as skipped, and how
// late each applied tick was within its interval.
func TestObserverHearsEveryTick(t *testing.T) {
	const (
		interval = 100 * time.Millisecond
		refill   = 3
		want     = 4 // applied ticks to observe
	)
	rdb := redistest.Client(t)
	name := fmt.Sprintf("obs%d", time.Now().UnixNano())
	settings := queue.Settings{RefillSize: refill, RefillInterval: interval, SessionTTL: time.Hour}
	store, err := queue.NewStore(rdb, []string{name}, settings, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 100; i++ { // a line long enough that every tick moves a full refill
		if _, err := store.Enter(ctx, name, fmt.Sprintf("u%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	obs := &tickLog{queues: map[string]bool{}}
	s, err := Start(store, Period(interval), slog.New(slog.NewTextHandler(io.Discard, nil)), obs)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		obs.mu.Lock()
		n := len(obs.applied)
		obs.mu.Unlock()
		if n >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d ticks applied in 30s", n)
		}
		time.Sleep(interval / 4)
	}
	if err := s.Stop(); err != nil { // no call runs after this
		t.Fatal(err)
	}

	points, err := store.History(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.errs) > 0 {
		t.Fatalf("errors: %v", obs.errs)
	}
	if len(obs.queues) != 1 || !obs.queues[name] {
		t.Fatalf("heard of queues %v, want only %s", obs.queues, name)
	}
	// Every applied tick closes one interval in the history (the first
	// closes the initial bucket's, on which users entered directly).
	if len(points) != len(obs.applied) {
		t.Fatalf("%d applied ticks heard, %d in the history", len(obs.applied), len(points))
	}
	if obs.skipped == 0 {
		t.Fatal("no skipped call heard: the scheduler calls the tick several times per interval")
	}
	for i, res := range obs.applied {
		if res.Moved != refill {
			t.Errorf("applied tick %d moved %d, want %d", i, res.Moved, refill)
		}
		if res.Late < 0 || res.Late >= interval {
			t.Errorf("applied tick %d late by %s: not within its %s interval", i, res.Late, interval)
		}
	}
}
