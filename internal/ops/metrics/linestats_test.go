package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// histogram returns the observations and their sum in q's series of the
// histogram name, as a scrape reads them.
func histogram(t *testing.T, m *Metrics, name, q string) (count uint64, sum float64) {
	t.Helper()
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "queue" && l.GetValue() == q {
					return s.GetHistogram().GetSampleCount(), s.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	t.Fatalf("no %s series for %s", name, q)
	return 0, 0
}

// What the line felt like, from a real line: a direct admission and one
// from the line observed at the tick that follows (time in line, ETA
// error), a done observed when the store hears it (time inside), each in
// its histogram, in seconds.
func TestLineHistograms(t *testing.T) {
	ctx := context.Background()
	q := uniq("line")
	rdb := redistest.Client(t)
	var m *Metrics // hears the store it reads, as main wires them
	store, err := queue.NewStore(rdb, []string{q}, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, 2*time.Second,
		queue.WithObserver(func(s *queue.Store) queue.Observer { m = New(s); return m }))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"waitroom_queue_time_in_line_seconds", "waitroom_queue_eta_error_seconds", "waitroom_queue_time_inside_seconds"} {
		if n, _ := histogram(t, m, name, q); n != 0 {
			t.Errorf("%s: %d observations before any", name, n)
		}
	}
	tick := func() queue.TickResult {
		t.Helper()
		rdb.HDel(ctx, rediskeys.Tick(q), "next_at_ms") // as if the hour had passed
		res, err := store.Tick(ctx, q)
		if err != nil || !res.Applied {
			t.Fatalf("tick: %+v %v", res, err)
		}
		m.Tick(q, res, time.Millisecond, nil)
		return res
	}
	tick()
	a, err := store.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: "a"}})
	if err != nil || a.Status != queue.Entered {
		t.Fatalf("a: %+v %v", a, err)
	}
	if b, err := store.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: "b"}}); err != nil || b.Position != 1 {
		t.Fatalf("b: %+v %v", b, err)
	}
	res := tick() // a waited 0, b a few ms; b was told an hour
	if n, _ := histogram(t, m, "waitroom_queue_time_in_line_seconds", q); n != 2 {
		t.Errorf("time in line: %d observations, want 2 (%+v)", n, res.Samples)
	}
	if n, sum := histogram(t, m, "waitroom_queue_eta_error_seconds", q); n != 1 || sum > -3500 || sum < -3600 {
		t.Errorf("ETA error: %d observations summing %vs, want 1 of about -1h", n, sum)
	}
	if ok, err := store.Done(ctx, q, "a", a.AdmittedAt); err != nil || !ok {
		t.Fatalf("done: %v %v", ok, err)
	}
	if n, sum := histogram(t, m, "waitroom_queue_time_inside_seconds", q); n != 1 || sum <= 0 || sum > 60 {
		t.Errorf("time inside: %d observations summing %vs, want 1 of a moment", n, sum)
	}
}
