// Command wr-tenmillion holds ten million places in one queue
// (docs/SCALE.md "Ten million, measured on this box"). Three modes:
//
//   - fill: -places places enter one queue through the real
//     queue.Store.Enter, in process, from -workers goroutines, so that the
//     store's group commit gathers them into large enter.lua calls. At
//     each of -marks places it prints Redis's used_memory per place
//     (delta from before the fill ÷ ZCARD of the line). Places already
//     in the line count: a rerun tops up.
//
//   - scripts: redis-server's CPU (/proc/PID/stat) per call of
//     snapshot.lua (Store.RefreshSnapshot, force) and of tick.lua
//     (Store.Tick: within the interval, the call every replica makes once
//     a second; and applied, each call admitting -refill), -n calls each,
//     one after another on one connection, with INFO commandstats'
//     µs per call as a second view.
//
//   - enter: -places enters through the HTTP API (-url), each from an
//     address of its own (X-Forwarded-For), closed loop on -conns
//     connections; the place credentials of places numbered -skip and
//     beyond go to -tokens, one a line, for a load generator to poll
//     with (scripts/line-bench.sh).
//
//     wr-tenmillion -mode fill -redis-addr 127.0.0.1:6379 -places 10000000
//     wr-tenmillion -mode scripts -redis-addr 127.0.0.1:6379 -redis-pid P -n 200
//
//   - burst: the opening (burst.go): -places enters through the HTTP API,
//     open loop, due evenly over -burst-for, then every acknowledged
//     place checked in Redis (0 lost or duplicated, FIFO).
//
//     wr-tenmillion -mode enter -url http://127.0.0.1:8080 -places 200000 -skip 10000 -tokens t.txt
//     wr-tenmillion -mode burst -url http://127.0.0.1:8080 -redis-addr 127.0.0.1:6379 -places 1000000 -burst-for 60s -conns 1024
//
// scripts/tenmillion.sh and scripts/line-bench.sh start a private Redis
// (and server) and run it. Use a throwaway Redis.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
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
		fmt.Fprintln(os.Stderr, "wr-tenmillion:", err)
		os.Exit(1)
	}
}

type config struct {
	mode, redisAddr, queue string
	redisPID               int
	places, workers, n     int
	refill                 int
	marks                  []int
	url, tokens            string
	conns, skip, addrBase  int
	burstFor               time.Duration
	clkTck                 int64
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("wr-tenmillion", flag.ContinueOnError)
	fs.StringVar(&c.mode, "mode", "fill", "fill, scripts, enter or burst")
	fs.StringVar(&c.redisAddr, "redis-addr", "127.0.0.1:6379", "redis host:port")
	fs.IntVar(&c.redisPID, "redis-pid", 0, "redis-server's pid, for its CPU time (scripts)")
	fs.StringVar(&c.queue, "queue", "default", "the queue")
	fs.IntVar(&c.places, "places", 10_000_000, "places in the line after the fill (fill), or enters to make (enter)")
	fs.IntVar(&c.workers, "workers", 4096, "goroutines calling Store.Enter (fill)")
	marks := fs.String("marks", "1000000,5000000,10000000", "line lengths at which to print memory per place (fill)")
	fs.IntVar(&c.n, "n", 200, "calls of each script (scripts)")
	fs.IntVar(&c.refill, "refill", 10, "places an applied tick admits (scripts)")
	fs.StringVar(&c.url, "url", "http://127.0.0.1:8080", "the server's base URL (enter)")
	fs.StringVar(&c.tokens, "tokens", "", "file for the place credentials (enter)")
	fs.IntVar(&c.conns, "conns", 64, "connections (enter)")
	fs.IntVar(&c.skip, "skip", 0, "credentials of the first skip places are not written (enter): those near the head")
	fs.IntVar(&c.addrBase, "addr-base", 20_000_000, "client address number of the burst's first enter (burst)")
	fs.DurationVar(&c.burstFor, "burst-for", 60*time.Second, "the burst's sends are due evenly over this time (burst)")
	fs.Int64Var(&c.clkTck, "clk-tck", 100, "clock ticks per second of /proc/PID/stat (getconf CLK_TCK)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if c.marks, err = parseMarks(*marks); err != nil {
		return c, err
	}
	switch {
	case c.places < 1, c.workers < 1, c.n < 1, c.conns < 1, c.refill < 1, c.clkTck < 1:
		return c, errors.New("places, workers, n, conns, refill and clk-tck must be positive")
	case c.mode == "scripts" && c.redisPID <= 0:
		return c, errors.New("-mode scripts needs -redis-pid")
	case c.mode == "enter" && c.tokens == "":
		return c, errors.New("-mode enter needs -tokens")
	case c.mode == "burst" && (c.burstFor <= 0 || c.addrBase < 0):
		return c, errors.New("-mode burst needs a positive -burst-for and a non-negative -addr-base")
	case c.mode != "fill" && c.mode != "scripts" && c.mode != "enter" && c.mode != "burst":
		return c, fmt.Errorf("unknown -mode %q", c.mode)
	}
	return c, nil
}

// parseMarks reads "1000000,5000000" into ascending, distinct, positive
// line lengths.
func parseMarks(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(strings.ReplaceAll(f, "_", ""))
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad mark %q", f)
		}
		out = append(out, n)
	}
	sort.Ints(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, fmt.Errorf("mark %d twice", out[i])
		}
	}
	return out, nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	switch c.mode {
	case "fill":
		return fill(ctx, c, out)
	case "scripts":
		return scripts(ctx, c, out)
	case "burst":
		return burst(ctx, c, out)
	default:
		return enter(ctx, c, out)
	}
}

// defaults are the service's own defaults (config): refill 10 every 5 s.
func defaults(refill int, interval time.Duration) queue.Settings {
	return queue.Settings{RefillSize: refill, RefillInterval: interval, SessionTTL: 10 * time.Minute, AbandonAfter: 2 * time.Minute}
}

func usedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	s, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(s) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("no used_memory in INFO memory")
}

func fill(ctx context.Context, c config, out io.Writer) error {
	rdb := redis.NewClient(&redis.Options{Addr: c.redisAddr, PoolSize: 8})
	defer rdb.Close()
	admin := redis.NewClient(&redis.Options{Addr: c.redisAddr})
	defer admin.Close()
	s, err := queue.NewStore(rdb, []string{c.queue}, defaults(10, 5*time.Second), 30*time.Second)
	if err != nil {
		return err
	}
	waiting := rediskeys.Waiting(c.queue)
	have, err := admin.ZCard(ctx, waiting).Result()
	if err != nil {
		return err
	}
	// Members are numbered from the queue's arrival counter, so that a
	// top-up adds new places rather than moving old ones to the back.
	base, err := admin.Get(ctx, rediskeys.Seq(c.queue)).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	mem0, err := usedMemory(ctx, admin)
	if err != nil {
		return err
	}
	if have > 0 {
		fmt.Fprintf(out, "fill: %d places already waiting; memory per place is then of the whole line\n", have)
		mem0 = 0
	}
	todo := int64(c.places) - have
	if todo <= 0 {
		fmt.Fprintf(out, "fill: nothing to do (%d waiting)\n", have)
		return nil
	}
	fmt.Fprintf(out, "fill: %d enters from %d goroutines (Store.Enter, group commit), used_memory before %d B\n", todo, c.workers, mem0)
	var next, done, failed atomic.Int64
	t0 := time.Now()
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= todo {
					return
				}
				if _, err := s.Enter(ctx, c.queue, queue.Entry{Caller: queue.Caller{User: fillMember(base + i)}}); err != nil {
					if failed.Add(1) == 1 {
						fmt.Fprintf(os.Stderr, "fill: first failure: %v\n", err)
					}
					continue
				}
				done.Add(1)
			}
		})
	}
	// Marks and progress, while the goroutines fill.
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	marks := c.marks
	tk := time.NewTicker(50 * time.Millisecond)
	defer tk.Stop()
	lastPrint := time.Now()
	for {
		finished := false
		select {
		case <-stopped:
			finished = true
		case <-tk.C:
		}
		n, err := admin.ZCard(ctx, waiting).Result()
		if err != nil {
			return err
		}
		for len(marks) > 0 && n >= int64(marks[0]) {
			mem, err := usedMemory(ctx, admin)
			if err != nil {
				return err
			}
			el := time.Since(t0)
			fmt.Fprintf(out, "mark %d: line %d, used_memory %d B (%.2f GiB), %.1f B a place, %.1f s in, %.0f enters/s so far\n",
				marks[0], n, mem, float64(mem)/(1<<30), float64(mem-mem0)/float64(n), el.Seconds(), float64(done.Load())/el.Seconds())
			marks = marks[1:]
		}
		if time.Since(lastPrint) > 10*time.Second {
			fmt.Fprintf(os.Stderr, "fill: %d waiting, %.0f enters/s\n", n, float64(done.Load())/time.Since(t0).Seconds())
			lastPrint = time.Now()
		}
		if finished {
			el := time.Since(t0)
			mem, err := usedMemory(ctx, admin)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "fill: %d enters in %.1f s (%.0f/s), %d failed; line %d, used_memory %d B (%.2f GiB), %.1f B a place\n",
				done.Load(), el.Seconds(), float64(done.Load())/el.Seconds(), failed.Load(), n, mem, float64(mem)/(1<<30), float64(mem-mem0)/float64(n))
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if failed.Load() > 0 {
				return fmt.Errorf("%d enters failed", failed.Load())
			}
			return nil
		}
	}
}

// fillMember is place i's member, as long as the server's own (24 bytes:
// "a:" and 22 random characters, as a credential's member is), so that
// memory per place is that of a line entered through the API.
func fillMember(i int64) string { return fmt.Sprintf("a:f%021d", i) }

// evalsha returns INFO commandstats' evalsha calls and µs.
func evalsha(ctx context.Context, rdb *redis.Client) (calls, usec int64, err error) {
	s, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(s) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for f := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return calls, usec, nil
}

// measure runs call n times and returns redis-server's CPU per call (µs,
// /proc) and INFO commandstats' evalsha µs per call, and the wall time per
// call as the caller saw it.
func measure(ctx context.Context, c config, admin *redis.Client, call func() error) (procUS, statUS, wallUS float64, err error) {
	if err := call(); err != nil { // loads the script
		return 0, 0, 0, err
	}
	calls0, usec0, err := evalsha(ctx, admin)
	if err != nil {
		return 0, 0, 0, err
	}
	t0, err := procstat.CPUTicks(c.redisPID)
	if err != nil {
		return 0, 0, 0, err
	}
	w0 := time.Now()
	for range c.n {
		if err := call(); err != nil {
			return 0, 0, 0, err
		}
	}
	wall := time.Since(w0)
	t1, err := procstat.CPUTicks(c.redisPID)
	if err != nil {
		return 0, 0, 0, err
	}
	calls1, usec1, err := evalsha(ctx, admin)
	if err != nil {
		return 0, 0, 0, err
	}
	procUS = float64(t1-t0) * 1e6 / float64(c.clkTck) / float64(c.n)
	if dc := calls1 - calls0; dc > 0 {
		statUS = float64(usec1-usec0) / float64(dc)
	}
	return procUS, statUS, float64(wall.Microseconds()) / float64(c.n), nil
}

func scripts(ctx context.Context, c config, out io.Writer) error {
	admin := redis.NewClient(&redis.Options{Addr: c.redisAddr})
	defer admin.Close()
	rdb := redis.NewClient(&redis.Options{Addr: c.redisAddr, PoolSize: 1})
	defer rdb.Close()
	n, err := admin.ZCard(ctx, rediskeys.Waiting(c.queue)).Result()
	if err != nil {
		return err
	}
	// The store as a replica holds it at the defaults.
	idle, err := queue.NewStore(rdb, []string{c.queue}, defaults(10, 5*time.Second), 30*time.Second)
	if err != nil {
		return err
	}
	// The second has an interval of 1 ms, so that every tick call
	// applies, and abandonment off, so that a call admits refill and
	// drops nobody; the third is the same with abandonment on: its ticks
	// drop up to a batch (1,000) of places unheard for 2 min at the head,
	// the worst a tick does (-n/100 calls of it).
	noAbandon := defaults(c.refill, time.Millisecond)
	noAbandon.AbandonAfter = 0
	applying, err := queue.NewStore(rdb, []string{c.queue}, noAbandon, 30*time.Second)
	if err != nil {
		return err
	}
	dropping, err := queue.NewStore(rdb, []string{c.queue}, defaults(c.refill, time.Millisecond), 30*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "scripts: line of %d, %d calls each, one connection, one after another\n", n, c.n)
	row := func(name string, call func() error) error {
		p, s, w, err := measure(ctx, c, admin, call)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(out, "%-34s redis-server CPU %8.1f µs a call (/proc)   commandstats %8.1f µs   round trip %8.1f µs\n", name, p, s, w)
		return nil
	}
	if err := row("snapshot.lua (RefreshSnapshot)", func() error { return idle.RefreshSnapshot(ctx, c.queue, true) }); err != nil {
		return err
	}
	// Applied first: a tick remembers when the next is due (one interval
	// after it), so after a 5 s store's tick the 1 ms store's would wait.
	var applied atomic.Int64
	if err := row(fmt.Sprintf("tick.lua, applied (admits %d)", c.refill), func() error {
		time.Sleep(2 * time.Millisecond) // the next 1 ms interval
		r, err := applying.Tick(ctx, c.queue)
		if r.Applied {
			applied.Add(1)
		}
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "  (of those %d applied)\n", applied.Load())
	applied.Store(0)
	all := c.n
	c.n = max(1, c.n/100)
	if err := row("tick.lua, applied, dropping unheard", func() error {
		time.Sleep(2 * time.Millisecond)
		r, err := dropping.Tick(ctx, c.queue)
		if r.Applied {
			applied.Add(1)
		}
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "  (%d calls, of those %d applied)\n", c.n, applied.Load())
	c.n = all
	applied.Store(0)
	if err := row("tick.lua, within the interval", func() error {
		r, err := idle.Tick(ctx, c.queue)
		if r.Applied {
			applied.Add(1)
		}
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "  (of those %d applied)\n", applied.Load())
	m, err := admin.ZCard(ctx, rediskeys.Waiting(c.queue)).Result()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "scripts: line now %d\n", m)
	return nil
}

// clientAddr is the same pseudo-random IPv4 for n as lab/cmd/wr-million,
// loadtest/wrk/clients.lua and lib.sh's wr_client_addr: distinct for n
// below 100 × 2^24, never loopback.
func clientAddr(n int64) string {
	lo := n % 16777216 * 40503 % 16777216
	return fmt.Sprintf("%d.%d.%d.%d", 11+n/16777216%100, lo>>16, lo>>8&255, lo&255)
}

// writeTokens writes the credentials from index skip on, one a line
// (empty ones, enters that failed, left out).
func writeTokens(path string, tokens []string, skip int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, t := range tokens[min(skip, len(tokens)):] {
		if t != "" {
			fmt.Fprintln(w, t)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func enter(ctx context.Context, c config, out io.Writer) error {
	tokens := make([]string, c.places)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: c.conns, MaxConnsPerHost: c.conns}}
	u := strings.TrimRight(c.url, "/") + "/api/v1/queues/" + c.queue + "/enter"
	var next, failed atomic.Int64
	t0 := time.Now()
	var wg sync.WaitGroup
	for range c.conns {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(c.places) {
					return
				}
				tok, _, err := enterOne(ctx, hc, u, clientAddr(i))
				if err != nil {
					if failed.Add(1) == 1 {
						fmt.Fprintf(os.Stderr, "enter: first failure: %v\n", err)
					}
					continue
				}
				tokens[i] = tok
			}
		})
	}
	wg.Wait()
	el := time.Since(t0)
	if err := writeTokens(c.tokens, tokens, c.skip); err != nil {
		return err
	}
	fmt.Fprintf(out, "enter: %d enters over HTTP in %.1f s (%.0f/s), %d failed; the credentials of places %d and on in %s\n",
		c.places, el.Seconds(), float64(c.places)/el.Seconds(), failed.Load(), c.skip, c.tokens)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if failed.Load() > int64(c.places)/100 {
		return fmt.Errorf("%d of %d enters failed", failed.Load(), c.places)
	}
	return nil
}

// enterOne posts an enter from address xff and returns the place
// credential, or the HTTP status (0: no answer) and an error.
func enterOne(ctx context.Context, hc *http.Client, u, xff string) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader("{}"))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", xff)
	resp, err := hc.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", resp.StatusCode, fmt.Errorf("enter: %d %s", resp.StatusCode, body)
	}
	var t struct {
		PlaceToken string `json:"place_token"`
	}
	if err := json.Unmarshal(body, &t); err != nil || t.PlaceToken == "" {
		return "", resp.StatusCode, fmt.Errorf("enter: no place_token in %s", body)
	}
	return t.PlaceToken, resp.StatusCode, nil
}
