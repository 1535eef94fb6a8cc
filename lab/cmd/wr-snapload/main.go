// Command wr-snapload checks what many replicas' snapshot reads cost the
// queue's Redis (docs/SCALE.md): it fills one queue's line with
// -line places directly in Redis (no API: the line's contents are all
// the snapshot reads), then runs -replicas stores, each with its own
// client, as that many waitroom replicas would: each calls
// queue.Store.RefreshSnapshot(force) once a second, their seconds spread
// evenly, for -duration. With -tick each also calls the tick first, as
// the scheduler does (the tick is idempotent: one per interval applies).
// It reports redis-server's CPU over the run (/proc/PID/stat, utime +
// stime) as a share of one core, against the idle Redis before it, and
// Redis's own µs per snapshot read (INFO commandstats).
//
//	wr-snapload -redis-addr 127.0.0.1:6379 -redis-pid $(pidof redis-server)
//
// Use a throwaway Redis: the queue's keys are left for a rerun (-line
// places already there are not written again).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"

	"github.com/waitroom/waitroom/lab/internal/procstat"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "wr-snapload:", err)
		if errors.Is(err, errTargetMissed) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errTargetMissed = errors.New("a target was missed")

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("wr-snapload", flag.ContinueOnError)
	addr := fs.String("redis-addr", "127.0.0.1:6379", "redis host:port")
	pid := fs.Int("redis-pid", 0, "redis-server's pid, for its CPU time (required)")
	replicas := fs.Int("replicas", 50, "replicas to simulate: stores, each with its own client")
	line := fs.Int("line", 1_000_000, "places in the line")
	name := fs.String("queue", "snapload", "queue (its keys are written directly)")
	dur := fs.Duration("duration", 60*time.Second, "how long to read")
	idle := fs.Duration("idle", 10*time.Second, "how long to measure the idle Redis first")
	tick := fs.Bool("tick", false, "each replica calls the tick before its snapshot, as the scheduler does")
	clk := fs.Int64("clk-tck", 100, "clock ticks per second of /proc/PID/stat (getconf CLK_TCK)")
	target := fs.Float64("target-pct", 5, "target: Redis CPU over the run, % of one core")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *pid <= 0 || *replicas < 1 || *line < 1 || *dur <= 0 {
		return errors.New("-redis-pid, -replicas, -line and -duration must be positive")
	}
	admin := redis.NewClient(&redis.Options{Addr: *addr})
	defer admin.Close()
	if err := fill(ctx, admin, *name, *line); err != nil {
		return err
	}
	defaults := queue.Settings{RefillSize: 10, RefillInterval: 5 * time.Second, SessionTTL: 10 * time.Minute, AbandonAfter: 2 * time.Minute}
	stores := make([]*queue.Store, *replicas)
	for i := range stores {
		rdb := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: 2})
		defer rdb.Close()
		s, err := queue.NewStore(rdb, []string{*name}, defaults, 5*time.Second)
		if err != nil {
			return err
		}
		if err := s.RefreshSnapshot(ctx, *name, true); err != nil { // loads the script, opens the connection
			return err
		}
		stores[i] = s
	}

	idleTicks, err := ticksOver(ctx, *pid, *idle)
	if err != nil {
		return err
	}
	st0, err := evalsha(ctx, admin)
	if err != nil {
		return err
	}
	c0, err := procstat.CPUTicks(*pid)
	if err != nil {
		return err
	}
	t0 := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, *dur)
	defer cancel()
	var calls, fails atomic.Int64
	lat := make([][]time.Duration, *replicas)
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			// Replica i reads at i/replicas of each second.
			t := time.NewTimer(time.Duration(i) * time.Second / time.Duration(*replicas))
			defer t.Stop()
			for {
				select {
				case <-runCtx.Done():
					return
				case <-t.C:
				}
				t.Reset(time.Second)
				start := time.Now()
				force := true
				if *tick {
					res, err := s.Tick(runCtx, *name)
					if err != nil && runCtx.Err() == nil {
						fails.Add(1)
					}
					force = res.Applied
				}
				err := s.RefreshSnapshot(runCtx, *name, force)
				if runCtx.Err() != nil {
					return
				}
				calls.Add(1)
				if err != nil {
					fails.Add(1)
				}
				lat[i] = append(lat[i], time.Since(start))
			}
		})
	}
	wg.Wait()
	wall := time.Since(t0)
	c1, err := procstat.CPUTicks(*pid)
	if err != nil {
		return err
	}
	st1, err := evalsha(ctx, admin)
	if err != nil {
		return err
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	q := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(p*float64(len(all))))]
	}
	pct := float64(c1-c0) * 100 / float64(*clk) / wall.Seconds()
	idlePct := float64(idleTicks) * 100 / float64(*clk) / idle.Seconds()
	n := st1.calls - st0.calls
	fmt.Fprintf(out, "line %d, %d replicas, one read a second each (tick first: %t), %s: %d reads (%.1f/s), %d failed; round trip p50 %s, p99 %s, max %s\n",
		*line, *replicas, *tick, wall.Round(time.Millisecond), calls.Load(), float64(calls.Load())/wall.Seconds(), fails.Load(),
		q(0.5).Round(time.Microsecond), q(0.99).Round(time.Microsecond), q(1).Round(time.Microsecond))
	fmt.Fprintf(out, "redis: %.2f %% of a core over the run (idle before it: %.2f %%); evalsha %d calls, %.1f µs each inside Redis, %.2f %% of a core in scripts\n",
		pct, idlePct, n, float64(st1.usec-st0.usec)/float64(max(n, 1)), float64(st1.usec-st0.usec)/1e4/wall.Seconds())
	fmt.Fprintf(out, "SNAPLOAD_RESULT line=%d replicas=%d tick=%t reads=%d fails=%d redis_pct=%.2f idle_pct=%.2f evalsha_us=%.1f\n",
		*line, *replicas, *tick, calls.Load(), fails.Load(), pct, idlePct, float64(st1.usec-st0.usec)/float64(max(n, 1)))
	if pct >= *target || fails.Load() > 0 {
		fmt.Fprintf(out, "target: MISSED (%.2f %% of a core, target under %.1f %%; %d failed)\n", pct, *target, fails.Load())
		return errTargetMissed
	}
	fmt.Fprintf(out, "target: met (under %.1f %% of a core)\n", *target)
	return nil
}

// fill puts line places in the queue's waiting ZSET (member m<i>, score
// i+1, as enter.lua numbers arrivals) and its arrival counter, unless the
// line already holds that many.
func fill(ctx context.Context, rdb *redis.Client, name string, line int) error {
	n, err := rdb.ZCard(ctx, rediskeys.Waiting(name)).Result()
	if err != nil {
		return err
	}
	if n >= int64(line) {
		return nil
	}
	for lo := 0; lo < line; lo += 10_000 {
		zs := make([]redis.Z, 0, 10_000)
		for i := lo; i < min(lo+10_000, line); i++ {
			zs = append(zs, redis.Z{Score: float64(i + 1), Member: "m" + strconv.Itoa(i)})
		}
		if err := rdb.ZAdd(ctx, rediskeys.Waiting(name), zs...).Err(); err != nil {
			return err
		}
	}
	return rdb.Set(ctx, rediskeys.Seq(name), line, 0).Err()
}

type scriptStats struct{ calls, usec int64 }

func evalsha(ctx context.Context, rdb *redis.Client) (scriptStats, error) {
	var s scriptStats
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return s, err
	}
	for l := range strings.Lines(info) {
		// The queue's scripts are functions (FCALL); older builds ran them
		// with EVALSHA.
		l = strings.TrimSpace(l)
		rest, ok := strings.CutPrefix(l, "cmdstat_fcall:")
		if !ok {
			if rest, ok = strings.CutPrefix(l, "cmdstat_evalsha:"); !ok {
				continue
			}
		}
		for kv := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				n, _ := strconv.ParseInt(v, 10, 64)
				s.calls += n
			case "usec":
				n, _ := strconv.ParseInt(v, 10, 64)
				s.usec += n
			}
		}
	}
	return s, nil
}

// ticksOver returns the CPU ticks process pid spends over d.
func ticksOver(ctx context.Context, pid int, d time.Duration) (int64, error) {
	a, err := procstat.CPUTicks(pid)
	if err != nil {
		return 0, err
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(d):
	}
	b, err := procstat.CPUTicks(pid)
	return b - a, err
}
