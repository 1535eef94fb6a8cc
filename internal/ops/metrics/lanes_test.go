package metrics

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// TestLaneMetrics: an applied tick of a queue with a lane counts each
// lane's admissions and line, the general lane's as the rest, and a queue
// without lanes has no lane series.
func TestLaneMetrics(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	q, plain := uniq("lanes"), uniq("plain")
	store := newStore(t, rdb, q, plain)
	m := New(store)
	lanes := queue.Lanes{{Name: "priority", Share: 0.5}}
	if err := queue.NewInspector(store).UpdateSettings(ctx, q, queue.Update{Lanes: &lanes, RefillSize: ptr(2)}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"g0", "g1", "g2", "g3", queue.LaneMember("priority", "p0"), queue.LaneMember("priority", "p1"), queue.LaneMember("priority", "p2")} {
		if _, err := store.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: u}}); err != nil {
			t.Fatal(err)
		}
	}
	// The first bucket let g0 and g1 in; the tick then moves one of each.
	for _, name := range []string{q, plain} {
		res, err := store.Tick(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		m.Tick(name, res, 0, nil)
	}
	for _, c := range []struct {
		lane              string
		admitted, waiting float64
	}{{"priority", 1, 2}, {"general", 1, 1}} {
		if got := testutil.ToFloat64(m.lanes.admitted.WithLabelValues(q, c.lane)); got != c.admitted {
			t.Errorf("%s admitted %v, want %v", c.lane, got, c.admitted)
		}
		if got := testutil.ToFloat64(m.lanes.waiting.WithLabelValues(q, c.lane)); got != c.waiting {
			t.Errorf("%s waiting %v, want %v", c.lane, got, c.waiting)
		}
	}
	if n := testutil.CollectAndCount(m.lanes.waiting); n != 2 {
		t.Errorf("%d lane series, want the two of the queue with a lane", n)
	}
}

func ptr[T any](v T) *T { return &v }
