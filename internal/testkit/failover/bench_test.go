package failover

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/config"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/redisconn"
	"github.com/waitroom/waitroom/internal/testkit/envconfig"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// cpuTimes are the CPU used so far by this process (the service side) and
// by the Redis nodes (INFO cpu: the primary's and the replica's).
type cpuTimes struct{ client, redis time.Duration }

func (a cpuTimes) sub(b cpuTimes) cpuTimes { return cpuTimes{a.client - b.client, a.redis - b.redis} }

func cpuNow(b *testing.B, nodes ...*node) cpuTimes {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	t := cpuTimes{client: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	for _, n := range nodes {
		info, err := n.client(b).Info(context.Background(), "cpu").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			k, v, _ := strings.Cut(line, ":")
			if k == "used_cpu_sys" || k == "used_cpu_user" {
				sec, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				t.redis += time.Duration(sec * float64(time.Second))
			}
		}
	}
	return t
}

// BenchmarkEnterReplicaWait measures what the replica WAIT costs an enter:
// a primary and a replica in containers, enters through the store (group
// commit included) from one caller and from 32 at once, WAIT off and
// WAITROOM_REDIS_WAIT_REPLICAS=1. ns/op is wall time per enter: with one
// caller the latency of an enter, with 32 the inverse of the throughput;
// the CPU per enter, of this process and of both Redis nodes, is steadier
// on a busy machine.
// Three rounds, interleaved.
//
//	go test -run '^$' -bench EnterReplicaWait -benchtime 3s ./internal/testkit/failover/
func BenchmarkEnterReplicaWait(b *testing.B) {
	nw := newNetwork(b)
	primary := startNode(b, nw, 6379, "Ready to accept connections", nil, redisArgs...)
	ip, port, _ := net.SplitHostPort(primary.addr)
	replica := startNode(b, nw, 6379, "Ready to accept connections", nil, append(append([]string{}, redisArgs...), "--replicaof", ip, port)...)
	ctx := context.Background()
	wait.For(b, 30*time.Second, "replica in sync", func() (bool, string) {
		info, err := replica.client(b).Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up"), fmt.Sprint(err)
	})

	// Rounds interleave the settings, so the machine's drifts hit all alike
	// (the repeated names get go test's #01, #02 suffixes).
	for range 3 {
		for _, callers := range []int{1, 32} {
			for _, wait := range []int{0, 1} {
				b.Run(fmt.Sprintf("callers=%d/wait=%d", callers, wait), func(b *testing.B) {
					cfg, err := config.Load(envconfig.Lookup(map[string]string{"WAITROOM_REDIS_URL": "redis://" + primary.addr + "/0"}))
					if err != nil {
						b.Fatal(err)
					}
					opts, err := cfg.Redis()
					if err != nil {
						b.Fatal(err)
					}
					rdb := redisconn.New(opts)
					defer rdb.Close()
					q := fmt.Sprintf("bench-%d-%d-%d", callers, wait, time.Now().UnixNano())
					s, err := queue.NewStore(rdb, []string{q}, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, 2*time.Second,
						queue.WithReplicaWait(queue.ReplicaWait{Replicas: wait, Timeout: 100 * time.Millisecond}))
					if err != nil {
						b.Fatal(err)
					}
					cpu0 := cpuNow(b, primary, replica)
					// callers goroutines share b.N enters.
					var next atomic.Int64
					var wg sync.WaitGroup
					b.ResetTimer()
					for range callers {
						wg.Go(func() {
							for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
								if _, err := s.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: fmt.Sprintf("u%d", i)}}); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
					b.StopTimer()
					cpu := cpuNow(b, primary, replica).sub(cpu0)
					b.ReportMetric(float64(s.ReplicaWaitShortfalls()), "short")
					b.ReportMetric(float64(cpu.client.Microseconds())/float64(b.N), "client-cpu-µs/op")
					b.ReportMetric(float64(cpu.redis.Microseconds())/float64(b.N), "redis-cpu-µs/op")
				})
			}
		}
	}
}
