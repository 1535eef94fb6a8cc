package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkWebhooks is the cost of the events for the site on
// the scripts, webhooks off (the flag unset: what every queue without a
// URL pays) and on (each event written to the outbox, never delivered
// here, so the stream runs at its MAXLEN bound): a tick moving 10 and
// 1,000 users, an enter admitted at once (one admitted event), an enter
// that queues and a status (no event). docs/PERFORMANCE.md, "Webhooks":
//
//	go test -run '^$' -bench Webhooks -benchtime 2000x ./internal/engine/queue/
func BenchmarkWebhooks(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("webhooks=%v", on), func(b *testing.B) {
			setup := func(b *testing.B, settings Settings) (*Store, string, *redis.Client) {
				s, q, rdb := benchStore(b, settings)
				if on {
					rdb.HSet(context.Background(), keysFor(q).config, "webhooks", "1")
				}
				b.Cleanup(func() { rdb.Del(context.Background(), keysFor(q).events, keysFor(q).gone, keysFor(q).heard) })
				return s, q, rdb
			}
			ctx := context.Background()
			for _, refill := range []int{10, 1000} {
				b.Run(fmt.Sprintf("tick/moves=%d", refill), func(b *testing.B) {
					s, q, r := setup(b, Settings{RefillSize: refill, RefillInterval: time.Hour, SessionTTL: time.Hour})
					filled := 0
					measureEvents(b, r, func() {
						for b.Loop() {
							b.StopTimer()
							if filled < refill {
								fill(b, r, q, 20*refill)
								filled = 20 * refill
							}
							r.HDel(ctx, keysFor(q).tick, "next_at_ms", "min_next_ms")
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
			b.Run("enter/admitted", func(b *testing.B) {
				s, q, r := setup(b, Settings{RefillSize: MaxRefillSize, RefillInterval: time.Hour, SessionTTL: time.Hour})
				i := 0
				measureEvents(b, r, func() {
					for b.Loop() {
						if i%MaxRefillSize == MaxRefillSize-1 {
							b.StopTimer()
							r.Del(ctx, keysFor(q).tokens) // a full bucket again
							b.StartTimer()
						}
						t, err := s.Enter(ctx, q, Entry{Caller: Caller{User: userID(i)}})
						if err != nil || t.Status != Entered {
							b.Fatalf("enter: %+v %v", t, err)
						}
						i++
					}
				})
			})
			b.Run("enter/queued", func(b *testing.B) {
				s, q, r := setup(b, benchSettings)
				fill(b, r, q, 10000)
				i := 10000
				measureEvents(b, r, func() {
					for b.Loop() {
						if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: userID(i)}}); err != nil {
							b.Fatal(err)
						}
						i++
					}
				})
			})
			b.Run("status", func(b *testing.B) {
				s, q, r := setup(b, benchSettings)
				fill(b, r, q, 10000)
				measureEvents(b, r, func() {
					for b.Loop() {
						if _, err := s.Status(ctx, q, Caller{User: userID(rand.IntN(10000))}); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		})
	}
}

// measureEvents is measureRedis, and the HGET and XADD commands the
// scripts ran per operation, with the Redis time they took (INFO
// commandstats counts a script's commands too): the flag's reading and
// the outbox's entries. Their counts, unlike the times, do not move with
// the machine's load.
func measureEvents(b *testing.B, rdb *redis.Client, fn func()) {
	b.Helper()
	h0, hu0 := commandStats(b, rdb, "hget")
	x0, xu0 := commandStats(b, rdb, "xadd")
	measureRedis(b, rdb, fn)
	h1, hu1 := commandStats(b, rdb, "hget")
	x1, xu1 := commandStats(b, rdb, "xadd")
	n := float64(b.N)
	b.ReportMetric((h1-h0)/n, "hget/op")
	b.ReportMetric((hu1-hu0)/n, "hget-µs/op")
	b.ReportMetric((x1-x0)/n, "xadd/op")
	b.ReportMetric((xu1-xu0)/n, "xadd-µs/op")
}

// commandStats is how many times Redis has run command, and the µs it
// took.
func commandStats(b *testing.B, rdb *redis.Client, command string) (calls, usec float64) {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_"+command+":")
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
