package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// Benchmarks of each script against a real Redis. Besides ns/op (a round
// trip from this process) each reports redis-µs/op, the Redis CPU time in
// scripts per operation, from INFO commandstats, which is what limits a
// shared Redis, and calls/op. Run with a Redis for the tests (redistest),
// e.g. REDIS_ADDR=127.0.0.1:6379:
//
//	go test -run '^$' -bench . -benchtime 2000x ./internal/engine/queue/
//
// docs/PERFORMANCE.md has the commands and figures.

func benchStore(b *testing.B, settings Settings) (*Store, string, *redis.Client) {
	b.Helper()
	rdb := redistest.Client(b)
	name := fmt.Sprintf("b%d", time.Now().UnixNano())
	s, err := NewStore(rdb, []string{name}, settings, 5*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		k := keysFor(name)
		rdb.Del(context.Background(), k.waiting, k.entered, k.tokens, k.seq, k.config, k.tick, k.history)
	})
	return s, name, rdb
}

// scriptStats returns the calls and total µs Redis spent in the queue's
// scripts (FCALL).
func scriptStats(b *testing.B, rdb *redis.Client) (calls, usec float64) {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_fcall:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				calls = f
			case "usec":
				usec = f
			}
		}
	}
	return calls, usec
}

// measureRedis reports the Redis CPU µs spent in scripts per operation of
// fn, and script calls per operation (below 1 when calls were batched).
func measureRedis(b *testing.B, rdb *redis.Client, fn func()) {
	b.Helper()
	c0, u0 := scriptStats(b, rdb)
	fn()
	c1, u1 := scriptStats(b, rdb)
	b.ReportMetric((u1-u0)/float64(b.N), "redis-µs/op")
	b.ReportMetric((c1-c0)/float64(b.N), "calls/op")
}

// fill puts n users in the line the way enter.lua would, pipelined, so a
// line of a million takes seconds rather than minutes.
func fill(b testing.TB, rdb *redis.Client, q string, n int) {
	b.Helper()
	ctx := context.Background()
	k := keysFor(q)
	const batch = 10000
	for start := 0; start < n; start += batch {
		members := make([]redis.Z, 0, batch)
		for i := start; i < min(start+batch, n); i++ {
			members = append(members, redis.Z{Score: float64(i + 1), Member: userID(i)})
		}
		if err := rdb.ZAdd(ctx, k.waiting, members...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	if err := rdb.Set(ctx, k.seq, n, 0).Err(); err != nil {
		b.Fatal(err)
	}
	if err := rdb.Set(ctx, k.tokens, 0, 0).Err(); err != nil {
		b.Fatal(err)
	}
}

// userID is a 16-byte id, about the size of what sites pass.
func userID(i int) string { return fmt.Sprintf("user-%011d", i) }

var benchSettings = Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour}

func BenchmarkEnter(b *testing.B) {
	s, q, rdb := benchStore(b, benchSettings)
	ctx := context.Background()
	i := 0
	measureRedis(b, rdb, func() {
		for b.Loop() {
			if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: userID(i)}}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// measureParallel runs call from 32 callers per CPU at once, as under
// load, where their calls are gathered into shared script calls
// (batch.go), and reports the Redis time per call like measureRedis.
func measureParallel(b *testing.B, rdb *redis.Client, call func() error) {
	b.Helper()
	b.SetParallelism(32)
	measureRedis(b, rdb, func() {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := call(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkEnterParallel has many callers enter at once (measureParallel).
func BenchmarkEnterParallel(b *testing.B) {
	s, q, rdb := benchStore(b, benchSettings)
	ctx := context.Background()
	var n atomic.Int64
	measureParallel(b, rdb, func() error {
		_, err := s.Enter(ctx, q, Entry{Caller: Caller{User: userID(int(n.Add(1)))}})
		return err
	})
}

func BenchmarkStatus(b *testing.B) {
	s, q, rdb := benchStore(b, benchSettings)
	fill(b, rdb, q, 10000)
	ctx := context.Background()
	measureRedis(b, rdb, func() {
		for b.Loop() {
			if _, err := s.Status(ctx, q, Caller{User: userID(rand.IntN(10000))}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStatusParallel has many callers ask at once, as a polling crowd
// does (measureParallel).
func BenchmarkStatusParallel(b *testing.B) {
	s, q, rdb := benchStore(b, benchSettings)
	fill(b, rdb, q, 10000)
	ctx := context.Background()
	measureParallel(b, rdb, func() error {
		_, err := s.Status(ctx, q, Caller{User: userID(rand.IntN(10000))})
		return err
	})
}

func BenchmarkLeave(b *testing.B) {
	s, q, rdb := benchStore(b, benchSettings)
	fill(b, rdb, q, 10000)
	ctx := context.Background()
	measureRedis(b, rdb, func() {
		for b.Loop() {
			if err := s.Leave(ctx, q, Caller{User: userID(rand.IntN(10000))}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTick measures one applied tick moving refill_size users from a
// long line: 10 (the default) and 10,000, each admission measured.
func BenchmarkTick(b *testing.B) {
	for _, refill := range []int{10, 10000} {
		b.Run(fmt.Sprintf("moves=%d", refill), func(b *testing.B) {
			s, q, rdb := benchStore(b, Settings{RefillSize: refill, RefillInterval: time.Hour, SessionTTL: time.Hour})
			ctx := context.Background()
			k := keysFor(q)
			// Enough users for every iteration; b.Loop runs the body at
			// least b.N times, so fill by a generous bound.
			filled := 0
			measureRedis(b, rdb, func() {
				for b.Loop() {
					b.StopTimer()
					if filled < refill {
						fill(b, rdb, q, 20*refill)
						filled = 20 * refill
						// As if the whole line came after one tick: every
						// admission is measured (tick_stats.lua).
						rdb.ZAdd(ctx, k.arrivals, redis.Z{Score: 0, Member: fmt.Sprintf("%d:0:%d:%d", time.Now().UnixMilli(), refill, time.Hour.Milliseconds())})
					}
					rdb.HDel(ctx, k.tick, "next_at_ms", "min_next_ms")
					b.StartTimer()
					res, err := s.Tick(ctx, q)
					if err != nil || !res.Applied || res.Moved != int64(refill) {
						b.Fatalf("tick: %+v %v", res, err)
					}
					filled -= refill
				}
			})
		})
	}
}

// BenchmarkScale shows how enter, status and tick grow with the line, and
// Redis memory per waiting user (bytes/user, from MEMORY USAGE of the line
// with all elements sampled).
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{10000, 100000, 1000000} {
		b.Run(fmt.Sprintf("waiting=%d", n), func(b *testing.B) {
			s, q, rdb := benchStore(b, benchSettings)
			ctx := context.Background()
			fill(b, rdb, q, n)
			mem, err := rdb.MemoryUsage(ctx, keysFor(q).waiting, 0).Result()
			if err != nil {
				b.Fatal(err)
			}
			b.Run("enter", func(b *testing.B) {
				i := n
				measureRedis(b, rdb, func() {
					for b.Loop() {
						if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: userID(i)}}); err != nil {
							b.Fatal(err)
						}
						i++
					}
				})
			})
			b.Run("status", func(b *testing.B) {
				measureRedis(b, rdb, func() {
					for b.Loop() {
						if _, err := s.Status(ctx, q, Caller{User: userID(rand.IntN(n))}); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			b.Run("tick", func(b *testing.B) {
				measureRedis(b, rdb, func() {
					for b.Loop() {
						b.StopTimer()
						rdb.HDel(ctx, keysFor(q).tick, "next_at_ms", "min_next_ms")
						b.StartTimer()
						if _, err := s.Tick(ctx, q); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			b.Run("memory", func(b *testing.B) {
				for b.Loop() {
				}
				b.ReportMetric(float64(mem)/float64(n), "bytes/user")
			})
		})
	}
}

// BenchmarkTickAdapt is the tick with the controller off, and on with a
// proposal stored at every tick (the compare-and-set and the HMGET it
// adds), 10 moves each: the cost the order page's health adds to a tick
// (docs/PERFORMANCE.md).
func BenchmarkTickAdapt(b *testing.B) {
	const refill = 10
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("adapt=%v", on), func(b *testing.B) {
			s, q, rdb := benchStore(b, Settings{RefillSize: refill, RefillInterval: time.Hour, SessionTTL: time.Hour})
			ctx := context.Background()
			k := keysFor(q)
			if on {
				enabled, floor := true, 1
				if err := NewInspector(s).UpdateSettings(ctx, q, Update{AdaptEnabled: &enabled, MinRefillSize: &floor}); err != nil {
					b.Fatal(err)
				}
			}
			filled, budget := 0, refill
			measureRedis(b, rdb, func() {
				for b.Loop() {
					b.StopTimer()
					if filled < refill {
						fill(b, rdb, q, 20*refill)
						filled = 20 * refill
					}
					rdb.HDel(ctx, k.tick, "next_at_ms", "min_next_ms")
					var p Proposal
					if on { // alternate 10 and 9, so every tick stores a step
						p = Proposal{Refill: 19 - budget, Base: budget}
					}
					b.StartTimer()
					res, err := s.TickWith(ctx, q, p)
					if err != nil || !res.Applied || res.Adapted != on {
						b.Fatalf("tick: %+v %v", res, err)
					}
					budget = int(res.Budget)
					filled -= int(res.Moved)
				}
			})
		})
	}
}

// BenchmarkTickNotDue measures the call every replica makes several
// times per interval and that finds the tick not due yet: without a
// schedule, and with a window in force.
func BenchmarkTickNotDue(b *testing.B) {
	for _, windows := range []bool{false, true} {
		b.Run(fmt.Sprintf("window=%v", windows), func(b *testing.B) {
			s, q, rdb := benchStore(b, benchSettings)
			ctx := context.Background()
			if _, err := s.Tick(ctx, q); err != nil { // the first tick applies
				b.Fatal(err)
			}
			if windows {
				refill, now := 20, time.Now()
				sc := Schedule{Windows: []Window{{Start: now.Add(-time.Minute), End: now.Add(time.Hour), RefillSize: &refill}}}
				if _, _, err := NewInspector(s).SetSchedule(ctx, q, sc); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Tick(ctx, q); err != nil { // starts it
					b.Fatal(err)
				}
			}
			measureRedis(b, rdb, func() {
				for b.Loop() {
					if res, err := s.Tick(ctx, q); err != nil || res.Applied {
						b.Fatalf("tick: %+v %v", res, err)
					}
				}
			})
		})
	}
}

// BenchmarkWindows measures windows.lua finding the window in force
// applied (what a call costs that changes nothing), and a window ending
// and the next starting (each replica's tick calls it only then).
func BenchmarkWindows(b *testing.B) {
	for _, change := range []bool{false, true} {
		b.Run(fmt.Sprintf("change=%v", change), func(b *testing.B) {
			s, q, rdb := benchStore(b, benchSettings)
			ctx := context.Background()
			ref, err := s.queue(q)
			if err != nil {
				b.Fatal(err)
			}
			refill, other, now := 20, 30, time.Now()
			in := Schedule{Windows: []Window{{Start: now.Add(-time.Minute), End: now.Add(time.Hour), RefillSize: &refill}}}
			next := Schedule{Windows: []Window{{Start: now.Add(-2 * time.Minute), End: now.Add(time.Hour), RefillSize: &other}}}
			if _, _, err := NewInspector(s).SetSchedule(ctx, q, in); err != nil {
				b.Fatal(err)
			}
			if _, err := s.applyWindows(ctx, ref); err != nil {
				b.Fatal(err)
			}
			i := 0
			measureRedis(b, rdb, func() {
				for b.Loop() {
					if change { // the other window in force: one ends, the other starts
						b.StopTimer()
						sc := in
						if i%2 == 0 {
							sc = next
						}
						if _, _, err := NewInspector(s).SetSchedule(ctx, q, sc); err != nil {
							b.Fatal(err)
						}
						i++
						b.StartTimer()
					}
					if w, err := s.applyWindows(ctx, ref); err != nil || (w != nil) != change {
						b.Fatalf("windows: %+v %v", w, err)
					}
				}
			})
		})
	}
}
