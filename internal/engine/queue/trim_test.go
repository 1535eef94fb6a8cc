package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The bounds of tick.lua's trims of the sets the users' traffic fills
// (GONE_TRIM_MAX, STALE_TRIM_MAX), and how long gone keeps a record
// (GONE_KEEP_MS, common_places.lua).
const (
	goneTrimMax  = 10000
	staleTrimMax = 10000
	goneKeep     = time.Hour
)

// redisNowMS is the Redis clock, which the scripts read.
func redisNowMS(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UnixMilli()
}

// zaddAll adds members in pipelined chunks.
func zaddAll(t *testing.T, rdb *redis.Client, key string, members []redis.Z) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < len(members); i += 5000 {
		if err := rdb.ZAdd(ctx, key, members[i:min(i+5000, len(members))]...).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// zcount counts key's members scored in [lo, hi].
func zcount(t *testing.T, rdb *redis.Client, key, lo, hi string) int64 {
	t.Helper()
	n, err := rdb.ZCount(context.Background(), key, lo, hi).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A backlog of old gone records and of stale marks the head has passed,
// larger than one tick's bound, is drained by successive ticks, each
// removing at most its bound, and what is still needed stays.
func TestTicksDrainTrimmedSetsInBoundedSteps(t *testing.T) {
	t.Parallel()
	s, q, rdb := newStore(t, Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour})
	k := keysFor(q)
	tick(t, s, rdb, q)
	const backlog = 2*goneTrimMax + 500
	now := redisNowMS(t, rdb)
	old := now - goneKeep.Milliseconds() - time.Minute.Milliseconds()
	gone, stale := make([]redis.Z, 0, backlog+10), make([]redis.Z, 0, backlog+10)
	for i := range backlog {
		gone = append(gone, redis.Z{Score: float64(old - int64(i)), Member: fmt.Sprintf("left:old-%d", i)})
		// The line is empty and no arrival number was given: every mark
		// below 1 is behind the head.
		stale = append(stale, redis.Z{Score: float64(-i), Member: fmt.Sprintf("old-%d", i)})
	}
	for i := range 10 {
		gone = append(gone, redis.Z{Score: float64(now - 1000), Member: fmt.Sprintf("left:new-%d", i)})
		stale = append(stale, redis.Z{Score: 1000, Member: fmt.Sprintf("new-%d", i)})
	}
	zaddAll(t, rdb, k.gone, gone)
	zaddAll(t, rdb, k.stale, stale)

	cutoff := fmt.Sprint(now - goneKeep.Milliseconds())
	goneLeft, staleLeft := int64(backlog), int64(backlog)
	for step := 1; goneLeft > 0 || staleLeft > 0; step++ {
		if step > 3 {
			t.Fatalf("not drained after 3 ticks: %d gone, %d stale left", goneLeft, staleLeft)
		}
		tick(t, s, rdb, q)
		g, st := zcount(t, rdb, k.gone, "-inf", cutoff), zcount(t, rdb, k.stale, "-inf", "0")
		if goneLeft-g != min(goneLeft, goneTrimMax) || staleLeft-st != min(staleLeft, staleTrimMax) {
			t.Fatalf("tick %d removed %d gone and %d stale, want %d and %d", step,
				goneLeft-g, staleLeft-st, min(goneLeft, goneTrimMax), min(staleLeft, staleTrimMax))
		}
		goneLeft, staleLeft = g, st
	}
	if g, st := zcount(t, rdb, k.gone, "-inf", "+inf"), zcount(t, rdb, k.stale, "-inf", "+inf"); g != 10 || st != 10 {
		t.Fatalf("kept %d gone and %d stale, want the 10 recent of each", g, st)
	}
}

// Each gone record written retires up to two past the hour (mark_gone), so
// leaves and dones never outrun the tick's bounded trim.
func TestMarkGoneRetiresOldRecords(t *testing.T) {
	t.Parallel()
	s, q, rdb := newStore(t, Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour})
	k := keysFor(q)
	old := redisNowMS(t, rdb) - goneKeep.Milliseconds() - 1000
	zaddAll(t, rdb, k.gone, []redis.Z{
		{Score: float64(old), Member: "left:a"}, {Score: float64(old), Member: "left:b"}, {Score: float64(old), Member: "left:c"},
	})
	enter(t, s, q, "u")
	if err := s.Leave(context.Background(), q, Caller{User: "u"}); err != nil {
		t.Fatal(err)
	}
	members, err := rdb.ZRange(context.Background(), k.gone, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 2 || members[0] != "left:c" || members[1] != "left:u" {
		t.Fatalf("gone holds %v, want [left:c left:u]", members)
	}
}
