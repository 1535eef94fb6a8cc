package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The far-back status path (snapshot.go): a place 100,000 long line, its
// status answered from the replica's snapshot and the credential's arrival
// number, no Redis. Stale credentials add a look-up of the stale credentials
// (stale.go): BenchmarkStatusFarBack with none recorded (the lock is
// skipped), BenchmarkStatusFarBackStale with 10,000 recorded leaves. Run:
//
//	go test -run '^$' -bench 'StatusFarBack' -benchtime 200000x ./internal/engine/queue/
func BenchmarkStatusFarBack(b *testing.B) {
	benchFarBack(b, 0)
}

func BenchmarkStatusFarBackStale(b *testing.B) {
	benchFarBack(b, 10000)
}

func benchFarBack(b *testing.B, leaves int) {
	const n = 100000
	s, q, rdb := benchStore(b, benchSettings)
	fill(b, rdb, q, n)
	ctx := context.Background()
	if _, err := s.Tick(ctx, q); err != nil { // the next is an hour away
		b.Fatal(err)
	}
	for i := range leaves {
		if err := s.Leave(ctx, q, Caller{User: userID(n - 1 - i)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.RefreshSnapshot(ctx, q, true); err != nil {
		b.Fatal(err)
	}
	c := Caller{User: userID(n / 2), Proved: true, Seq: n/2 + 1}
	if t, err := s.Status(ctx, q, c); err != nil || !t.Estimated {
		b.Fatalf("%+v, %v: not answered from the snapshot", t, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Status(ctx, q, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTickHolds measures the worst tick of held places: nearly
// holdBatch silent places (no heard record) at the head, all set aside in
// one tick with abandonment on, then the refill's 10 heard places behind
// them admitted. redis-µs/op is the Redis time the tick blocks others.
//
//	go test -run '^$' -bench 'TickHolds' -benchtime 5x ./internal/engine/queue/
func BenchmarkTickHolds(b *testing.B) {
	const refill = 10
	s, q, rdb := benchStore(b, Settings{RefillSize: refill, RefillInterval: time.Hour, SessionTTL: time.Hour, AbandonAfter: time.Hour})
	ctx := context.Background()
	k := keysFor(q)
	measureRedis(b, rdb, func() {
		for b.Loop() {
			b.StopTimer()
			rdb.Del(ctx, k.waiting, k.held, k.heard)
			fill(b, rdb, q, holdBatch)
			heard := make([]redis.Z, refill)
			for i := range heard {
				heard[i] = redis.Z{Score: float64(time.Now().UnixMilli()), Member: userID(holdBatch - refill + i)}
			}
			rdb.ZAdd(ctx, k.heard, heard...)
			rdb.HDel(ctx, k.tick, "next_at_ms", "min_next_ms")
			b.StartTimer()
			res, err := s.Tick(ctx, q)
			if err != nil || !res.Applied || res.Moved != refill {
				b.Fatalf("tick: %+v %v", res, err)
			}
		}
	})
}

// BenchmarkStaleLookup is the far-back path's added cost alone (no Redis):
// the look-up of a credential in a set of 10,000 stale ones, and with none
// (the lock skipped).
func BenchmarkStaleLookup(b *testing.B) {
	for _, n := range []int{0, 10000} {
		b.Run(fmt.Sprintf("stale=%d", n), func(b *testing.B) {
			st := newStaleSet()
			entries := make([]staleEntry, n)
			for i := range entries {
				entries[i] = staleEntry{user: userID(i), upTo: int64(1000 + i)}
			}
			st.apply(entries, time.Now(), 0)
			user := userID(50000)
			b.ReportAllocs()
			for b.Loop() {
				if st.stale(user, 50001, 1) {
					b.Fatal("not stale")
				}
			}
		})
	}
}
