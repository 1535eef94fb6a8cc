package httpapi

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/client"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// redisInfo reads a field of INFO section (used_memory, or a command's
// calls and usec from commandstats: "cmdstat_fcall").
func redisInfo(t *testing.T, rdb *redis.Client, section, field string) string {
	t.Helper()
	raw, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(raw, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// fcallUsec is the Redis time (µs) and calls of FCALL so far.
func fcallUsec(t *testing.T, rdb *redis.Client) (usec, calls int64) {
	t.Helper()
	for _, kv := range strings.Split(redisInfo(t, rdb, "commandstats", "cmdstat_fcall"), ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "calls":
			calls = n
		case "usec":
			usec = n
		}
	}
	return usec, calls
}

// TestMeasureDraw measures a draw of WAITROOM_DRAW_N participants (skipped
// when unset; docs/perf-log/draw.md has the run at 1,000,000): the enters
// into the sealed pre-queue (each made its draw key in Go), the tick
// calls that place it (each at most drawBatch, 10,000, a line), the list
// served in pages of 5,000 through GET .../draw, and the whole list
// verified (client.VerifyDraw, a member's own place too).
func TestMeasureDraw(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("WAITROOM_DRAW_N"))
	if n <= 0 {
		t.Skip("set WAITROOM_DRAW_N to measure a draw of that many (docs/perf-log/draw.md)")
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), PoolSize: 64})
	t.Cleanup(func() { _ = rdb.Close() })
	e := newEnv(t, rdb, queue.Settings{RefillSize: 100, RefillInterval: time.Second, SessionTTL: time.Hour}, 30*time.Second,
		Options{AdminToken: adminToken, InsecureUserIDs: true})
	now, _ := rdb.Time(ctx).Result()
	from, opens := now.Add(-time.Minute), now.Add(time.Hour)
	in := queue.NewInspector(e.store)
	if err := in.UpdateSettings(ctx, e.queue, queue.Update{PrequeueFrom: &from, OpensAt: &opens}); err != nil {
		t.Fatal(err)
	}
	mem0, _ := strconv.ParseInt(redisInfo(t, rdb, "memory", "used_memory"), 10, 64)

	// The enters: 512 at once, gathered into batches as a crowd's are.
	start := time.Now()
	usec0, calls0 := fcallUsec(t, rdb)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 512 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				tk, err := e.store.Enter(ctx, e.queue, queue.Entry{Caller: queue.Caller{User: fmt.Sprintf("m%07d", i)}})
				if err != nil || tk.Status != queue.Waiting || tk.Position != 0 {
					t.Errorf("enter %d: %+v %v", i, tk, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	entered := time.Since(start)
	usec1, calls1 := fcallUsec(t, rdb)
	mem1, _ := strconv.ParseInt(redisInfo(t, rdb, "memory", "used_memory"), 10, 64)
	t.Logf("%d enters into the pre-queue: %v (%.0f a second); %d script calls, %.1f µs of Redis time a participant",
		n, entered.Round(time.Millisecond), float64(n)/entered.Seconds(), calls1-calls0, float64(usec1-usec0)/float64(n))
	t.Logf("Redis memory: %.0f MB before, %.0f MB with the pre-queue (%.0f bytes a participant)",
		float64(mem0)/1e6, float64(mem1)/1e6, float64(mem1-mem0)/float64(n))

	// The opening: the tick calls that place the draw.
	opened := now.Add(-time.Millisecond)
	if err := in.UpdateSettings(ctx, e.queue, queue.Update{PrequeueFrom: &from, OpensAt: &opened}); err != nil {
		t.Fatal(err)
	}
	var longest time.Duration
	var placing []time.Duration
	start = time.Now()
	for {
		u0, c0 := fcallUsec(t, rdb)
		res, err := e.store.Tick(ctx, e.queue)
		if err != nil {
			t.Fatal(err)
		}
		u1, c1 := fcallUsec(t, rdb)
		d := time.Duration(u1-u0) * time.Microsecond
		if c1-c0 != 1 {
			t.Logf("the tick call made %d FCALLs", c1-c0)
		}
		placing = append(placing, d)
		longest = max(longest, d)
		if res.Applied {
			break
		}
		if len(placing) > n/1000+10 {
			t.Fatal("the draw is never placed")
		}
	}
	wall := time.Since(start)
	var sum time.Duration
	for _, d := range placing {
		sum += d
	}
	mem2, _ := strconv.ParseInt(redisInfo(t, rdb, "memory", "used_memory"), 10, 64)
	t.Logf("placed in %d tick calls (%v wall): Redis time %v in all, %v a call on average, the longest %v",
		len(placing), wall.Round(time.Millisecond), sum.Round(time.Millisecond), (sum / time.Duration(len(placing))).Round(100*time.Microsecond), longest.Round(100*time.Microsecond))
	t.Logf("Redis memory once placed (the line and the draw's list): %.0f MB (%.0f bytes a participant over the start)",
		float64(mem2)/1e6, float64(mem2-mem0)/float64(n))

	// The list, through the API, in pages of 5,000, and checked whole.
	start = time.Now()
	d, err := client.FetchDraw(ctx, nil, e.srv.URL+"/api/v1/queues/"+e.queue+"/draw")
	if err != nil {
		t.Fatal(err)
	}
	fetched := time.Since(start)
	start = time.Now()
	member := fmt.Sprintf("m%07d", n/2)
	rep, err := client.VerifyDraw(d, client.DrawCheck{Commitment: d.DrawCommitment, Member: member})
	if err != nil || rep.Count != int64(n) {
		t.Fatalf("the draw of %d: %+v %v", n, rep, err)
	}
	t.Logf("the list: %d pages of at most 5,000 read in %v (%v a page); verified whole in %v; %s holds place %d",
		(n+4999)/5000, fetched.Round(time.Millisecond), (fetched / time.Duration((n+4999)/5000)).Round(100*time.Microsecond),
		time.Since(start).Round(time.Millisecond), member, rep.MemberPlace)
	// The deepest page alone, as a CDN's miss would fetch it.
	last := fmt.Sprintf("0.%d", max(1, n-4999))
	start = time.Now()
	if r := e.do("GET", "/api/v1/queues/"+e.queue+"/draw?limit=5000&cursor="+last, ""); r.status != 200 {
		t.Fatalf("the last page: %d", r.status)
	}
	t.Logf("the last page alone: %v", time.Since(start).Round(100*time.Microsecond))
}
