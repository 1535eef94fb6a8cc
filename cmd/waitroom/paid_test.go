package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/config"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/ops/paid"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// The wiring's pieces: a recorder over the configured queues with its
// flushing worker, a view of the configured price, and the prefixes
// gauge's source without a networks file.
func TestPaidWiring(t *testing.T) {
	rdb := redistest.Client(t)
	q := fmt.Sprintf("paidwiring%d", time.Now().UnixNano())
	store, err := queue.NewStore(rdb, []string{q}, queue.Settings{RefillSize: 1, RefillInterval: time.Second, SessionTTL: time.Minute}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	a := &app{cfg: config.Config{Queues: []string{q}, RequestTimeout: time.Second}, rdb: rdb, store: store}
	a.cfg.Defaults.Price = queue.Price{Bits: 13, CalmArrivals: 100}
	rec, err := a.newPaid(nil)
	if err != nil || len(a.workers) != 1 {
		t.Fatalf("newPaid: %v, %d workers", err, len(a.workers))
	}
	rec.Record(q, paid.Placed(13))
	d, err := a.defencesView(rec, false, nil, nil)(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if d.Policy.NetworkBits != 13 || d.Policy.CeilingBits != queue.DefaultMaxBits || d.Policy.HumanCheck.Mode != queue.HumanOff || d.Paid.Places != 1 {
		t.Errorf("view %+v", d)
	}
	if got := networkPrefixes(nil)(); got["shared"] != 0 || got["hosting"] != 0 || len(got) != 3 {
		t.Errorf("prefixes without a file: %v", got)
	}
}
