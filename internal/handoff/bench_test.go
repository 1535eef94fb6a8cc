package handoff

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/queue"
)

// What the hand-overs add to a status answered from the replica's
// snapshot (the far-back path, no Redis): one Tracker.Recent, an atomic
// load and a map lookup. "none" is the store without a tracker, "tracker"
// with one that knows of 1,000 recent moves (not this place's).
//
//	go test -run '^$' -bench BenchmarkFarBackStatus -benchtime 1s ./internal/handoff/
func BenchmarkFarBackStatus(b *testing.B) {
	e := newEnv(b, 1)
	q := e.queues[0]
	ctx := context.Background()
	users := make([]string, 400)
	for i := range users {
		users[i] = fmt.Sprintf("u%03d", i)
	}
	seqs := e.line(b, q, users...)
	for i := range 1000 {
		e.rdb.ZAdd(ctx, queue.MovedKey(q), redis.Z{Score: float64(time.Now().UnixMilli()), Member: fmt.Sprintf("moved-%d", i)})
	}
	far := holder("u300", 0)
	far.Seq = seqs["u300"]
	for _, c := range []struct {
		name  string
		moves queue.RecentMoves
	}{{"none", nil}, {"tracker", e.tracker}} {
		b.Run(c.name, func(b *testing.B) {
			store, err := queue.NewStore(e.rdb, e.queues, hour, e.svc.timeout)
			if err != nil {
				b.Fatal(err)
			}
			if c.moves != nil {
				store.SetRecentMoves(c.moves)
			}
			if err := store.RefreshSnapshot(ctx, q, true); err != nil {
				b.Fatal(err)
			}
			if err := e.tracker.Refresh(ctx, q); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				t, err := store.StatusAs(ctx, q, far)
				if err != nil || !t.Estimated {
					b.Fatalf("%+v, %v", t, err)
				}
			}
		})
	}
}
