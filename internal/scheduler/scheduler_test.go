package scheduler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
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
		s, err := Start(newReplica(), Period(interval), log)
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
