package queue

import (
	"context"
	"maps"
	"testing"
	"time"
)

// The webhook workers' two asks of the queue's config HASH: the switch
// and cap the scripts read, and the drop counts taken once and reset.
func TestOutboxSwitchAndDrops(t *testing.T) {
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
	cfg := s.queues[q].keys.config
	if err := s.SetOutbox(ctx, q, true, 250); err != nil {
		t.Fatal(err)
	}
	if got := rdb.HMGet(ctx, cfg, "webhooks", "webhooks_bulk_max").Val(); got[0] != "1" || got[1] != "250" {
		t.Fatalf("after SetOutbox(on, 250): %v", got)
	}
	if err := s.SetOutbox(ctx, q, false, 250); err != nil {
		t.Fatal(err)
	}
	if got := rdb.HGet(ctx, cfg, "webhooks").Val(); got != "0" {
		t.Fatalf("after SetOutbox(off): webhooks=%q", got)
	}

	if d, err := s.TakeOutboxDrops(ctx, q); err != nil || len(d) != 0 {
		t.Fatalf("no drops yet: %v %v", d, err)
	}
	rdb.HIncrBy(ctx, cfg, "webhooks_dropped_"+DropBulkFull, 7)
	rdb.HIncrBy(ctx, cfg, "webhooks_dropped_"+DropOutboxFull, 2)
	d, err := s.TakeOutboxDrops(ctx, q)
	if want := map[string]int64{DropBulkFull: 7, DropOutboxFull: 2}; err != nil || !maps.Equal(d, want) {
		t.Fatalf("drops = %v %v, want %v", d, err, want)
	}
	if d, err := s.TakeOutboxDrops(ctx, q); err != nil || len(d) != 0 {
		t.Fatalf("taken twice: %v %v", d, err)
	}
	if _, err := s.TakeOutboxDrops(ctx, "nope"); err == nil {
		t.Fatal("an unknown queue's drops were taken")
	}
}
