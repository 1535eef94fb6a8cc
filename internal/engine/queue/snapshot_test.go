package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// newCountedStore is newStore on a client of its own that counts what it
// sends to Redis.
func newCountedStore(t *testing.T, settings Settings) (*Store, string, *redistest.Counter) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	hook := &redistest.Counter{}
	rdb.AddHook(hook)
	name := fmt.Sprintf("snap%d", time.Now().UnixNano())
	s, err := NewStore(rdb, []string{name}, settings, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return s, name, hook
}

// A place far from the head is answered from the replica's snapshot and
// its credential's arrival number, with no Redis command at all; a place
// near the head, a place without an arrival number, and any place once
// the snapshot is too old get status.lua's exact answer. Only the places
// near the head were recorded as heard when they entered.
func TestFarBackStatusFromSnapshot(t *testing.T) {
	t.Parallel()
	settings := Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour, AbandonAfter: 2 * time.Minute}
	s, q, hook := newCountedStore(t, settings)
	ctx := context.Background()
	const n = 3000
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
	}
	// The bucket's 10 go in; everyone after waits, with an arrival number.
	var tickets []Ticket
	for i := 0; i < n; i += 500 {
		tickets = append(tickets, runEnterCall(t, s, q, users[i:i+500]...)...)
	}
	seq := map[string]int64{}
	for i, tk := range tickets {
		if (tk.Status == Waiting) != (tk.Seq > 0) {
			t.Fatalf("%s: %s with arrival number %d", users[i], tk.Status, tk.Seq)
		}
		seq[users[i]] = tk.Seq
	}
	near := int64(10 * 10) // near_head: 10 per tick, ten ticks (abandon_after is short beside the hour)
	heard, err := s.rdb.(*redis.Client).ZCard(ctx, s.queues[q].keys.heard).Result()
	if err != nil || heard != near {
		t.Fatalf("%d heard records after %d enters (%v), want the %d near the head", heard, n, err, near)
	}
	// A tick, so that the next is an hour away: while one is due, a tick
	// applied since the snapshot was read may have taken up to tickReach
	// places off the head, and those ask Redis too.
	if _, err := s.Tick(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := s.RefreshSnapshot(ctx, q, true); err != nil {
		t.Fatal(err)
	}

	for i := 20; i < n; i += 37 { // the bucket and the tick admitted the first 20
		u := users[i]
		before := hook.N()
		got, err := s.Status(ctx, q, Caller{User: u, Client: "198.18.0.1", Proved: true, Seq: seq[u]})
		if err != nil {
			t.Fatal(err)
		}
		sent := hook.N() - before
		exact := status(t, s, q, u)
		switch {
		case exact.Position > near+int64(n)/16 && (!got.Estimated || sent != 0):
			t.Errorf("%s at %d: estimated %v, %d commands sent", u, exact.Position, got.Estimated, sent)
		case exact.Position <= near && got.Estimated:
			t.Errorf("%s at %d, near the head, answered from the snapshot", u, exact.Position)
		case got.Estimated && got.Position != exact.Position:
			t.Errorf("%s: estimated %d, exactly %d (no one left: the estimate is exact)", u, got.Position, exact.Position)
		}
		if got.Status != Waiting || got.Waiting != exact.Waiting {
			t.Errorf("%s: %+v against %+v", u, got, exact)
		}
	}
	// Without an arrival number (a credential from before it): exact.
	if got, _ := s.Status(ctx, q, Caller{User: users[n-1], Proved: true}); got.Estimated {
		t.Error("a call without an arrival number was answered from the snapshot")
	}
	// A snapshot too old answers nothing.
	sn := s.queues[q].snap.Load()
	if _, ok := s.queues[q].answer(users[n-1], seq[users[n-1]], sn.read.Add(snapshotMaxAge+time.Millisecond)); ok {
		t.Error("a stale snapshot answered")
	}
}

// Measured, not asserted beyond a loose bound: with a third of the line
// gone at random (left, abandoned), how far the snapshot's positions are
// from the exact ranks, by distance from the head. Run with -v to see the
// table (docs/PERFORMANCE.md, "Positions from the snapshot").
func TestSnapshotPositionError(t *testing.T) {
	t.Parallel()
	settings := Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour, AbandonAfter: 2 * time.Minute}
	s, q, _ := newCountedStore(t, settings)
	ctx := context.Background()
	const n = 60000
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
	}
	seq := map[string]int64{}
	for i := 0; i < n; i += 1000 {
		for j, tk := range runEnterCall(t, s, q, users[i:i+1000]...) {
			seq[users[i+j]] = tk.Seq
		}
	}
	rng := rand.New(rand.NewPCG(5, 8))
	var stay []string
	for _, u := range users[10:] {
		if rng.IntN(3) == 0 {
			if err := s.Leave(ctx, q, Caller{User: u}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		stay = append(stay, u)
	}
	if err := s.RefreshSnapshot(ctx, q, true); err != nil {
		t.Fatal(err)
	}
	bands := []int64{100, 1000, 10000, 100000}
	errs := make([][]float64, len(bands))
	for i := 0; i < len(stay); i += 13 {
		u := stay[i]
		got, err := s.Status(ctx, q, Caller{User: u, Proved: true, Seq: seq[u]})
		if err != nil {
			t.Fatal(err)
		}
		if !got.Estimated {
			continue
		}
		exact := status(t, s, q, u)
		rel := float64(abs64(got.Position-exact.Position)) / float64(exact.Position)
		for b, limit := range bands {
			if exact.Position <= limit {
				errs[b] = append(errs[b], rel)
				break
			}
		}
	}
	for b, e := range errs {
		if len(e) == 0 {
			continue
		}
		sort.Float64s(e)
		p50, p90 := e[len(e)/2], e[len(e)*9/10]
		t.Logf("positions up to %6d: %5d estimates, relative error p50 %.4f, p90 %.4f, max %.4f", bands[b], len(e), p50, p90, e[len(e)-1])
		if p90 > 0.05 {
			t.Errorf("positions up to %d: p90 relative error %.3f, over 5 %%", bands[b], p90)
		}
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
