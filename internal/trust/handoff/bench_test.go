package handoff

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/skip2/go-qrcode"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// What the hand-overs add to a status answered from the replica's
// snapshot (the far-back path, no Redis): one Tracker.Recent, an atomic
// load and a map lookup. "none" is the store without a tracker, "tracker"
// with one that knows of 1,000 recent moves (not this place's).
//
//	go test -run '^$' -bench BenchmarkFarBackStatus -benchtime 1s ./internal/trust/handoff/
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
		e.rdb.ZAdd(ctx, rediskeys.Moved(q), redis.Z{Score: float64(time.Now().UnixMilli()), Member: fmt.Sprintf("moved-%d", i)})
	}
	far := holder("u300", 0)
	far.Seq = seqs["u300"]
	for _, c := range []struct {
		name  string
		moves queue.RecentMoves
	}{{"none", nil}, {"tracker", e.tracker}} {
		b.Run(c.name, func(b *testing.B) {
			store, err := queue.NewStore(e.rdb, e.queues, hour, e.svc.timeout, queue.WithRecentMoves(c.moves))
			if err != nil {
				b.Fatal(err)
			}
			if err := store.RefreshSnapshot(ctx, q, true); err != nil {
				b.Fatal(err)
			}
			if err := e.tracker.Refresh(ctx, q); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				t, err := store.Status(ctx, q, far)
				if err != nil || !t.Estimated {
					b.Fatalf("%+v, %v", t, err)
				}
			}
		})
	}
}

// The CPU a hand-over's QR code costs per request, reported
// as cpu-ns/op (the process's user+system time, steadier than wall time
// on a shared machine). "before" draws as the handler did before: the
// link on the request's Host (20 bytes, and the 2,150 bytes that forced a
// version-40 code). "draw" is a picture drawn now, on the public URL;
// "cached" a picture asked for again; "limited" a request over the
// place's limit.
//
//	go test -run '^$' -bench BenchmarkQR -benchtime 200x -count 3 ./internal/trust/handoff/
func BenchmarkQR(b *testing.B) {
	token := newToken()
	for _, host := range []string{"waitroom.example.com", strings.Repeat("a", 2150)} {
		b.Run(fmt.Sprintf("before/host-%dB", len(host)), func(b *testing.B) {
			link := "https://" + host + Path("default", token)
			cpu(b, func() {
				if _, err := qrcode.Encode(link, qrcode.Medium, QRSize); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
	b.Run("draw", func(b *testing.B) {
		link := "https://waitroom.example.com" + Path("default", token)
		cpu(b, func() {
			if _, err := QR(link); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("cached", func(b *testing.B) {
		c := newQRCache(MaxCachedQRs)
		fill := func() (qrEntry, error) { return qrEntry{png: []byte("png"), until: time.Now().Add(time.Hour)}, nil }
		ctx := context.Background()
		cpu(b, func() {
			if _, err := c.get(ctx, qrKey("default", "member", token), fill); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("limited", func(b *testing.B) {
		l := newQRLimits()
		cpu(b, func() { l.take("default", "member", "client") })
	})
}

// cpu runs f b.N times and reports the process's CPU time per run.
func cpu(b *testing.B, f func()) {
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		f()
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
