// Command wr-million measures "holding a million": it fills one
// queue with -users places through the HTTP API, then has every one of
// them poll its status exactly as the service's poll policy tells it
// (next call at the time of the last answer plus its poll_after_ms), open
// loop, and reports for a measurement window: the status rate against the
// rate the policy implies, latency, 503s, the generator's own lateness,
// how long after its admission each admitted user learned of it, and the
// CPU per status call of the server, Redis and the generator. Each user
// calls from an address of its own (X-Forwarded-For, -xff), as the server
// limits enter and status per client address; the server must trust the
// generator's address as a proxy (scripts/million.sh does). It also
// reports Redis commands per second (INFO commandstats) and HTTP bytes per
// call, and models connections as a browser's: a user's call reuses its
// connection within the server's idle timeout (-idle-timeout) of its last
// one, else opens a new one. With -burst, an opening: that many new users
// enter open loop over -burst-for from the window's start, and every
// acknowledged place is then checked in Redis (burst.go).
//
//	wr-million -url http://127.0.0.1:8080 -server-pid P -redis-pid R -redis-addr 127.0.0.1:6379
//
// scripts/million.sh starts a private Redis and server and runs it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/trust/pass"

	"github.com/waitroom/waitroom/lab/internal/procstat"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout)
	switch {
	case errors.Is(err, errTargetMissed):
		fmt.Fprintln(os.Stderr, "wr-million:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "wr-million:", err)
		os.Exit(1)
	}
}

// errTargetMissed: the run worked, the service missed a target.
var errTargetMissed = errors.New("a target was missed")

type config struct {
	baseURL, queue      string
	users               int
	fillConns, conns    int
	settle, duration    time.Duration
	serverPID, redisPID int
	redisAddr           string
	clkTck              int64
	targetP99           time.Duration
	xff                 bool
	idleTimeout         time.Duration
	// The opening burst (0: none): burst arrivals, open loop, evenly
	// over burstFor from the window's start, on burstConns connections.
	burst, burstConns int
	burstFor          time.Duration
	targetEnterP99    time.Duration
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("wr-million", flag.ContinueOnError)
	fs.StringVar(&c.baseURL, "url", "http://127.0.0.1:8080", "the server's base URL (plain http)")
	fs.StringVar(&c.queue, "queue", "default", "queue to fill")
	fs.IntVar(&c.users, "users", 1_000_000, "places to fill the queue with")
	fs.IntVar(&c.fillConns, "fill-conns", 64, "connections (and workers) that enter, closed loop")
	// Little's law: N connections carry rate R open loop only while the
	// mean latency stays under N/R. 512 held a million's ~17,700/s only
	// below 29 ms, and once the server slowed, the pool, not the schedule,
	// set the rate; 2048 holds it up to ~115 ms, past the p99 target.
	fs.IntVar(&c.conns, "conns", 2048, "connections (and workers) that send the scheduled status calls")
	fs.DurationVar(&c.settle, "settle", 60*time.Second, "wait after the fill before measuring (the longest poll interval is 60 s)")
	fs.DurationVar(&c.duration, "duration", 120*time.Second, "measurement window")
	fs.IntVar(&c.serverPID, "server-pid", 0, "the server's pid, for its CPU time (0: not measured)")
	fs.IntVar(&c.redisPID, "redis-pid", 0, "redis-server's pid, for its CPU time (0: not measured)")
	fs.StringVar(&c.redisAddr, "redis-addr", "", "redis host:port, for INFO memory before and after the fill (empty: skipped)")
	fs.Int64Var(&c.clkTck, "clk-tck", 100, "clock ticks per second of /proc/PID/stat (getconf CLK_TCK)")
	fs.DurationVar(&c.targetP99, "target-p99", 100*time.Millisecond, "status p99 target")
	// The server limits enter and status per client address; a million
	// users come from about as many. It believes the header only from a
	// trusted proxy (scripts/million.sh trusts loopback, lib.sh).
	fs.BoolVar(&c.xff, "xff", true, "send each user's calls with X-Forwarded-For: an address of its own")
	// A browser keeps a connection idle only as long as the server does:
	// a user's poll reuses its connection when it comes sooner than the
	// server's idle timeout after the user's last call, and opens a new
	// one otherwise. The generator cannot hold the million idle sockets
	// that means (see connModel in the report); it sends a reused
	// user's call on a pooled keep-alive connection and a new one's on a
	// freshly dialled one.
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 75*time.Second, "the server's keep-alive idle timeout (WAITROOM_IDLE_TIMEOUT); 0: every call reuses a pooled connection")
	fs.IntVar(&c.burst, "burst", 0, "opening burst: this many new arrivals, open loop, from the window's start (0: none)")
	fs.DurationVar(&c.burstFor, "burst-for", 20*time.Second, "the burst's arrivals are spread evenly over this time")
	fs.IntVar(&c.burstConns, "burst-conns", 1024, "connections (and workers) that send the burst's enters")
	fs.DurationVar(&c.targetEnterP99, "target-enter-p99", 250*time.Millisecond, "the burst's enter p99 target")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case c.users < 1, c.fillConns < 1, c.conns < 1, c.duration <= 0, c.settle < 0, c.clkTck < 1:
		return c, errors.New("users, fill-conns, conns, duration and clk-tck must be positive, settle not negative")
	case c.users+c.burst > math.MaxInt32 || c.users+c.burst < 0:
		return c, errors.New("users plus burst must fit an int32")
	case c.burst < 0, c.burst > 0 && (c.burstConns < 1 || c.burstFor <= 0 || c.burstFor > c.duration):
		return c, errors.New("burst must not be negative; with a burst, burst-conns positive and burst-for within the window")
	case c.idleTimeout < 0:
		return c, errors.New("idle-timeout must not be negative")
	}
	return c, nil
}

// Phases of the run; stats are kept apart per phase, and only the window
// is the measurement.
const (
	phaseFill = iota
	phaseSettle
	phaseWindow
	phaseAfter
	phases
)

var phaseNames = [phases]string{"fill", "settle", "window", "after"}

// Position bands: a user whose last answer put it within the next ten
// ticks is promised to learn of its turn within an interval.
const (
	bandNear = iota
	bandFar
	bands
)

// stats are one worker's counts for one phase; merged at the end.
type stats struct {
	calls, ok, err503, errOther, errTransport uint64
	waiting, entered, notWaiting              uint64
	reasons                                   map[string]uint64 // NOT_WAITING answers by reason
	near                                      uint64            // calls for users last seen within ten ticks
	fresh                                     uint64            // calls on a new connection: the user's had idled out
	dials                                     uint64            // connections dialled (fresh ones, and after a close)
	tx, rx                                    uint64            // bytes on the wire, HTTP requests and answers
	latency                                   hist              // µs, send start to answer
	lag                                       hist              // µs, send start minus its due time
	learn                                     [bands]hist       // ms, learned minus admitted
}

func (s *stats) merge(o *stats) {
	s.calls += o.calls
	s.ok += o.ok
	s.err503 += o.err503
	s.errOther += o.errOther
	s.errTransport += o.errTransport
	s.waiting += o.waiting
	s.entered += o.entered
	s.notWaiting += o.notWaiting
	s.near += o.near
	s.fresh += o.fresh
	s.dials += o.dials
	s.tx += o.tx
	s.rx += o.rx
	for r, n := range o.reasons {
		if s.reasons == nil {
			s.reasons = map[string]uint64{}
		}
		s.reasons[r] += n
	}
	s.latency.merge(&o.latency)
	s.lag.merge(&o.lag)
	for b := range o.learn {
		s.learn[b].merge(&o.learn[b])
	}
}

// gen is the generator's state. The per-user slices are written only by
// the goroutine handling that user's call; the schedule's mutex and the
// jobs channel order those writes between goroutines.
type gen struct {
	cfg        config
	addr, host string
	t0         time.Time // start of the run; times below are ns since it
	nearPos    int64     // last position within the next ten ticks
	interval   time.Duration

	token   []string // place credential per user
	lastPos []int32  // position in the user's last WAITING answer
	pollMS  []int32  // poll_after_ms in that answer (0: not polling)
	// lastCall is when the user's last call was answered (ns since t0):
	// its connection, in the browser model, idles from then.
	lastCall []int64
	// The burst's users (index users+i): when each enter was sent and
	// answered 200 (0: not acknowledged), ns since t0.
	burstSent, burstAck []int64
	burstSpan           [2]spanMark  // at the burst's start and after its last answer
	polls               atomic.Int64 // status calls answered, all phases

	sched *schedule
	jobs  chan call
	// rate is the sum over polling users of 1/poll_after, in calls per
	// second × 1e6: the status rate the policy asks for right now.
	rate atomic.Int64
	// polling counts the users with a poll interval: still waiting.
	polling atomic.Int64
	// Phase bounds (ns since t0), unknown until the fill ends.
	fillEnd, windowStart, windowEnd atomic.Int64
}

func (g *gen) now() int64 { return int64(time.Since(g.t0)) }

func (g *gen) phase(t int64) int {
	switch {
	case t < g.fillEnd.Load():
		return phaseFill
	case t < g.windowStart.Load():
		return phaseSettle
	case t < g.windowEnd.Load():
		return phaseWindow
	}
	return phaseAfter
}

// retryAfter is when a user asks again after a failed call: the waiting
// page's first backoff step (web/static/waiting-api.js BACKOFF_START_MS).
const retryAfter = time.Second

func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	u, err := url.Parse(cfg.baseURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("-url %q: want http://host:port", cfg.baseURL)
	}
	info, err := queueInfo(ctx, cfg.baseURL, cfg.queue)
	if err != nil {
		return err
	}
	g := &gen{
		cfg: cfg, addr: u.Host, host: u.Host, t0: time.Now(),
		nearPos:   10 * int64(info.RefillSize),
		interval:  time.Duration(info.RefillIntervalMS) * time.Millisecond,
		token:     make([]string, cfg.users+cfg.burst),
		lastPos:   make([]int32, cfg.users+cfg.burst),
		pollMS:    make([]int32, cfg.users+cfg.burst),
		lastCall:  make([]int64, cfg.users+cfg.burst),
		burstSent: make([]int64, cfg.burst),
		burstAck:  make([]int64, cfg.burst),
		sched:     newSchedule(cfg.users + cfg.burst),
		jobs:      make(chan call, 1024),
	}
	for _, a := range []*atomic.Int64{&g.fillEnd, &g.windowStart, &g.windowEnd} {
		a.Store(math.MaxInt64)
	}
	from := "an address each (X-Forwarded-For)"
	if !cfg.xff {
		from = "the generator's address"
	}
	fmt.Fprintf(out, "queue %q: refill %d every %s, %d waiting before the fill; %d users from %s, %d fill and %d poll connections, GOMAXPROCS %d\n",
		cfg.queue, info.RefillSize, g.interval, info.Waiting, cfg.users, from, cfg.fillConns, cfg.conns, runtime.GOMAXPROCS(0))
	memBefore, err := redisUsedMemory(ctx, cfg.redisAddr)
	if err != nil {
		return err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	pollStats := make([][phases]stats, cfg.conns)
	var wg sync.WaitGroup
	wg.Go(func() { g.dispatch(runCtx) })
	for i := range cfg.conns {
		wg.Go(func() { g.pollWorker(runCtx, &pollStats[i]) })
	}

	// Fill. Each user's first status call is scheduled from its enter
	// answer, so the head of the line polls (and is not dropped as
	// abandoned) while the back is still arriving, as in a real rush.
	fill, err := g.fill(runCtx)
	if err != nil {
		cancel()
		wg.Wait()
		return err
	}
	fillEnd := g.now()
	g.fillEnd.Store(fillEnd)
	fillSecs := time.Duration(fillEnd).Seconds()
	fmt.Fprintf(out, "fill: %d enters in %.1f s (%.0f/s), enter p50 %s p99 %s, %d admitted on entering, %d retried\n",
		cfg.users, fillSecs, float64(cfg.users)/fillSecs, us(fill.latency.quantile(0.5)), us(fill.latency.quantile(0.99)),
		fill.entered, fill.errOther)
	memAfter, err := redisUsedMemory(ctx, cfg.redisAddr)
	if err != nil {
		return err
	}
	after, err := queueInfo(ctx, cfg.baseURL, cfg.queue)
	if err != nil {
		return err
	}
	if cfg.redisAddr != "" && after.Waiting > 0 {
		fmt.Fprintf(out, "redis used_memory: %.1f MiB before, %.1f MiB after the fill, %d waiting: %.0f bytes per waiting user\n",
			float64(memBefore)/(1<<20), float64(memAfter)/(1<<20), after.Waiting, float64(memAfter-memBefore)/float64(after.Waiting))
	}

	wStart := fillEnd + int64(cfg.settle)
	wEnd := wStart + int64(cfg.duration)
	g.windowStart.Store(wStart)
	g.windowEnd.Store(wEnd)
	if err := sleepUntil(ctx, g.t0, wStart); err != nil {
		return err
	}
	cpu0, err := g.cpuSnapshot()
	if err != nil {
		return err
	}
	cmd0, err := redisCommands(ctx, cfg.redisAddr)
	if err != nil {
		return err
	}
	rate0 := g.rate.Load()
	var burst []stats
	var burstWG sync.WaitGroup
	if cfg.burst > 0 {
		burst = make([]stats, cfg.burstConns)
		burstWG.Go(func() { g.runBurst(runCtx, burst) })
	}
	if err := sleepUntil(ctx, g.t0, wEnd); err != nil {
		return err
	}
	cpu1, err := g.cpuSnapshot()
	if err != nil {
		return err
	}
	cmd1, err := redisCommands(ctx, cfg.redisAddr)
	if err != nil {
		return err
	}
	rate1 := g.rate.Load()
	left := g.polling.Load()
	burstWG.Wait() // within the window (burst-for ≤ duration) but for its last answers
	// The burst's places are checked against Redis while they still poll.
	var bc burstCheck
	if cfg.burst > 0 && cfg.redisAddr != "" {
		if bc, err = g.checkBurst(ctx); err != nil {
			cancel()
			wg.Wait()
			return err
		}
	}
	cancel()
	// Calls in flight finish within the server's own timeouts.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		return errors.New("status workers did not stop within 30 s of the window's end")
	}

	var total [phases]stats
	for i := range pollStats {
		for p := range phases {
			total[p].merge(&pollStats[i][p])
		}
	}
	var bt stats
	for i := range burst {
		bt.merge(&burst[i])
	}
	r := report{cfg: cfg, g: g, st: &total, cpu: [2]cpuSnap{cpu0, cpu1}, cmds: [2]redisCmds{cmd0, cmd1},
		impliedRate: float64(rate0+rate1) / 2 / 1e6, polling: left, waitingAfterFill: after.Waiting,
		burst: &bt, burstCheck: bc}
	return r.print(out)
}

// fill enters cfg.users places with cfg.fillConns closed-loop workers.
func (g *gen) fill(ctx context.Context) (stats, error) {
	ctx, cancel := context.WithCancel(ctx) // the first failure stops the others
	defer cancel()
	var next atomic.Int64
	per := make([]stats, g.cfg.fillConns)
	errs := make(chan error, g.cfg.fillConns)
	var wg sync.WaitGroup
	for i := range g.cfg.fillConns {
		wg.Go(func() {
			st := &per[i]
			c := &conn{addr: g.addr}
			defer c.close()
			var req []byte
			for {
				u := next.Add(1) - 1
				if u >= int64(g.cfg.users) || ctx.Err() != nil {
					return
				}
				req = appendEnterRequest(req[:0], g.host, g.cfg.queue, g.cfg.xff, int32(u))
				if err := g.enter(ctx, c, req, int32(u), st); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	var total stats
	for i := range per {
		total.merge(&per[i])
	}
	if err := <-errs; err != nil {
		return total, err
	}
	return total, nil
}

// enter makes user u's place, retrying a few times (counted in
// errOther), and schedules its first status call.
func (g *gen) enter(ctx context.Context, c *conn, req []byte, u int32, st *stats) error {
	for attempt := 0; ; attempt++ {
		start := g.now()
		code, body, err := c.do(req)
		end := g.now()
		st.calls++
		if err == nil && code == http.StatusOK {
			st.latency.add((end - start) / 1000)
			tok, ok1 := jsonString(body, "place_token")
			status, ok2 := jsonString(body, "status")
			if !ok1 || !ok2 {
				return fmt.Errorf("enter answer without place_token or status: %s", body)
			}
			g.token[u] = string(tok)
			g.lastCall[u] = end
			switch string(status) {
			case "WAITING":
				g.answered(u, body, end)
			case "ENTERED":
				st.entered++ // leftover tokens at the start: nothing to wait for
			default:
				return fmt.Errorf("enter answered %s", status)
			}
			return nil
		}
		st.errOther++
		if attempt == 4 {
			if err == nil {
				err = fmt.Errorf("HTTP %d: %s", code, body)
			}
			return fmt.Errorf("enter of user %d failed 5 times: %w", u, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// answered takes a WAITING answer for user u received at end: remember its
// position and poll interval, and schedule the next call as told.
func (g *gen) answered(u int32, body []byte, end int64) {
	pos, _ := jsonInt(body, "position")
	poll, ok := jsonInt(body, "poll_after_ms")
	if !ok || poll <= 0 {
		poll = 2000 // the page's fallback (FALLBACK_POLL_MS) when no hint came
	}
	poll = max(poll, 250) // and its floor (MIN_POLL_MS)
	g.lastPos[u] = int32(min(pos, math.MaxInt32))
	g.setPoll(u, int32(poll))
	g.sched.push(call{due: end + poll*int64(time.Millisecond), user: u})
}

// setPoll records user u's poll interval (0: stopped) in the implied rate.
func (g *gen) setPoll(u int32, ms int32) {
	var d int64
	if old := g.pollMS[u]; old > 0 {
		d -= 1e9 / int64(old)
		g.polling.Add(-1)
	}
	if ms > 0 {
		d += 1e9 / int64(ms)
		g.polling.Add(1)
	}
	g.pollMS[u] = ms
	g.rate.Add(d)
}

// dispatch hands each call to the workers when it falls due. Open loop:
// the schedule alone decides when a call is sent; a slow answer holds up
// only its own worker. When every worker is busy the calls wait in the
// channel, and the lateness shows as schedule lag.
func (g *gen) dispatch(ctx context.Context) {
	var due []call
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := g.now()
		var next int64
		var ok bool
		due, next, ok = g.sched.popDue(now, due[:0])
		for _, c := range due {
			select {
			case g.jobs <- c:
			case <-ctx.Done():
				return
			}
		}
		// A new call is never due sooner than 250 ms after it is pushed
		// (the smallest poll the page accepts; a retry waits 1 s), so
		// sleeping until the earliest one now scheduled misses nothing;
		// the cap keeps the loop responsive while the heap is empty.
		wait := 10 * time.Millisecond
		if ok {
			wait = min(wait, time.Duration(next-g.now()))
		}
		if wait <= 0 {
			continue
		}
		t.Reset(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// pollWorker sends the status calls the dispatcher hands it, on its own
// keep-alive connection.
func (g *gen) pollWorker(ctx context.Context, st *[phases]stats) {
	c := &conn{addr: g.addr}
	defer c.close()
	var req []byte
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-g.jobs:
			req = g.poll(c, req, j, st)
		}
	}
}

func (g *gen) poll(c *conn, req []byte, j call, all *[phases]stats) []byte {
	u := j.user
	start := g.now()
	// The browser model: the user's connection idled out on the server
	// since its last call, so this one opens a new connection.
	fresh := g.cfg.idleTimeout > 0 && start-g.lastCall[u] >= int64(g.cfg.idleTimeout)
	if fresh {
		c.close()
	}
	tx, rx, dials := c.tx, c.rx, c.dials
	req = appendStatusRequest(req[:0], g.host, g.cfg.queue, g.cfg.xff, u, g.token[u])
	code, body, err := c.do(req)
	end := g.now()
	g.lastCall[u] = end
	g.polls.Add(1)
	st := &all[g.phase(start)]
	st.calls++
	if fresh {
		st.fresh++
	}
	st.tx += c.tx - tx
	st.rx += c.rx - rx
	st.dials += c.dials - dials
	st.latency.add((end - start) / 1000)
	st.lag.add((start - j.due) / 1000)
	if int64(g.lastPos[u]) <= g.nearPos {
		st.near++
	}
	switch {
	case err != nil:
		st.errTransport++
	case code == http.StatusServiceUnavailable:
		st.err503++
	case code != http.StatusOK:
		st.errOther++
	}
	if err != nil || code != http.StatusOK {
		g.sched.push(call{due: end + int64(retryAfter), user: u})
		return req
	}
	st.ok++
	status, _ := jsonString(body, "status")
	switch string(status) {
	case "WAITING":
		st.waiting++
		g.answered(u, body, end)
	case "ENTERED":
		st.entered++
		g.setPoll(u, 0) // the page leaves for the order page
		// The pass is read unverified: the server has just handed it
		// over, and the generator only wants the admission's start.
		tok, _ := jsonString(body, "pass")
		claims, err := pass.UnverifiedClaims(string(tok))
		if err != nil {
			st.errOther++
			return req
		}
		adm := claims.AdmittedAt
		band := bandFar
		if int64(g.lastPos[u]) <= g.nearPos {
			band = bandNear
		}
		learned := g.t0.Add(time.Duration(end))
		all[g.phase(end)].learn[band].add(learned.Sub(adm).Milliseconds())
	default:
		st.notWaiting++
		g.setPoll(u, 0)
		reason, _ := jsonString(body, "reason")
		if st.reasons == nil {
			st.reasons = map[string]uint64{}
		}
		st.reasons[string(status)+"/"+string(reason)]++
	}
	return req
}

func sleepUntil(ctx context.Context, t0 time.Time, at int64) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t0.Add(time.Duration(at)))):
		return nil
	}
}

// cpuSnap is the CPU time (clock ticks) of the server, Redis and this
// process at one moment.
type cpuSnap struct {
	at                  time.Time
	server, redis, self int64
	cpus                []cpuTimes
}

func (g *gen) cpuSnapshot() (cpuSnap, error) {
	s := cpuSnap{at: time.Now()}
	var err error
	if g.cfg.serverPID > 0 {
		if s.server, err = procstat.CPUTicks(g.cfg.serverPID); err != nil {
			return s, err
		}
	}
	if g.cfg.redisPID > 0 {
		if s.redis, err = procstat.CPUTicks(g.cfg.redisPID); err != nil {
			return s, err
		}
	}
	if s.self, err = procstat.CPUTicks(os.Getpid()); err != nil {
		return s, err
	}
	s.cpus, err = readCPUTimes()
	return s, err
}

type queueInfoResponse struct {
	Waiting          int64 `json:"waiting"`
	RefillSize       int   `json:"refill_size"`
	RefillIntervalMS int64 `json:"refill_interval_ms"`
}

func queueInfo(ctx context.Context, base, q string) (queueInfoResponse, error) {
	var info queueInfoResponse
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/queues/"+url.PathEscape(q), nil)
	if err != nil {
		return info, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return info, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return info, fmt.Errorf("GET queue %q: HTTP %d", q, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		return info, err
	}
	if info.RefillSize <= 0 || info.RefillIntervalMS <= 0 {
		return info, fmt.Errorf("queue %q: refill %d every %d ms", q, info.RefillSize, info.RefillIntervalMS)
	}
	return info, nil
}

// redisUsedMemory returns INFO memory's used_memory (0 when addr is empty).
func redisUsedMemory(ctx context.Context, addr string) (int64, error) {
	if addr == "" {
		return 0, nil
	}
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	s, err := rc.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("redis INFO memory: %w", err)
	}
	for line := range strings.Lines(s) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			var n int64
			_, err := fmt.Sscan(v, &n)
			return n, err
		}
	}
	return 0, errors.New("redis INFO memory: no used_memory")
}

type report struct {
	cfg              config
	g                *gen
	st               *[phases]stats
	cpu              [2]cpuSnap
	cmds             [2]redisCmds
	burst            *stats
	burstCheck       burstCheck
	impliedRate      float64
	polling          int64
	waitingAfterFill int64
}

func (r *report) print(out io.Writer) error {
	w := &r.st[phaseWindow]
	secs := r.cfg.duration.Seconds()
	rate := float64(w.calls) / secs
	interval := r.g.interval
	ivl := func(ms int64) float64 { return float64(ms) / float64(interval.Milliseconds()) }
	cpuUS := func(d int64) float64 { return float64(d) * 1e6 / float64(r.cfg.clkTck) / float64(max(w.calls, 1)) }
	cpuPct := func(d int64) float64 { return float64(d) * 100 / float64(r.cfg.clkTck) / secs }
	ds := r.cpu[1].server - r.cpu[0].server
	dr := r.cpu[1].redis - r.cpu[0].redis
	dg := r.cpu[1].self - r.cpu[0].self

	fmt.Fprintf(out, "\nmeasurement window: %s, starting %s after the fill; %d users still waiting and polling at its end\n",
		r.cfg.duration, r.cfg.settle, r.polling)
	fmt.Fprintf(out, "status calls: %d, %.0f/s; the policy asked for %.0f/s (sum of 1/poll_after_ms over the pollers, mean of window start and end); %.1f %% for users within the next 10 ticks\n",
		w.calls, rate, r.impliedRate, 100*float64(w.near)/float64(max(w.calls, 1)))
	fmt.Fprintf(out, "answers: %d ok (%d WAITING, %d ENTERED, %d other), %d 503, %d other non-2xx, %d transport errors\n",
		w.ok, w.waiting, w.entered, w.notWaiting, w.err503, w.errOther, w.errTransport)
	if len(w.reasons) > 0 {
		keys := make([]string, 0, len(w.reasons))
		for k := range w.reasons {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(out, "  %s: %d\n", k, w.reasons[k])
		}
	}
	fmt.Fprintf(out, "latency: p50 %s, p90 %s, p99 %s, p99.9 %s, max %s\n",
		us(w.latency.quantile(0.5)), us(w.latency.quantile(0.9)), us(w.latency.quantile(0.99)),
		us(w.latency.quantile(0.999)), us(w.latency.max))
	fmt.Fprintf(out, "schedule lag (send start − due): p50 %s, p99 %s, max %s\n",
		us(w.lag.quantile(0.5)), us(w.lag.quantile(0.99)), us(w.lag.max))
	for b, name := range [bands]string{"within the next 10 ticks at their last poll", "further back at their last poll"} {
		h := &w.learn[b]
		if h.n == 0 {
			continue
		}
		fmt.Fprintf(out, "learned of admission, %s: %d users, lag p50 %d ms, p99 %d ms, max %d ms (max %.2f intervals)\n",
			name, h.n, h.quantile(0.5), h.quantile(0.99), h.max, ivl(h.max))
	}
	calls := float64(max(w.calls, 1))
	if r.burst != nil && r.burst.calls > 0 {
		calls += float64(r.burst.calls) // the window's CPU covers the burst's enters too
	}
	if r.cfg.serverPID > 0 || r.cfg.redisPID > 0 {
		what := "status call"
		if r.burst != nil && r.burst.calls > 0 {
			what = "call (status and the burst's enters)"
		}
		per := func(d int64) float64 { return float64(d) * 1e6 / float64(r.cfg.clkTck) / calls }
		fmt.Fprintf(out, "CPU per %s: server %.1f µs (%.0f %% of a core), redis %.1f µs (%.0f %%), generator %.1f µs (%.0f %%)\n",
			what, per(ds), cpuPct(ds), per(dr), cpuPct(dr), per(dg), cpuPct(dg))
	}
	c0, c1 := r.cmds[0], r.cmds[1]
	evalsha := c1.calls["evalsha"] - c0.calls["evalsha"]
	evalUS := c1.usec["evalsha"] - c0.usec["evalsha"]
	cmdTotal := c1.total - c0.total
	if r.cfg.redisAddr != "" {
		fmt.Fprintf(out, "redis commands: %.0f/s in all (%.3f per call), of which evalsha %.0f/s (%.3f per call, %.1f µs each inside Redis); by command:",
			float64(cmdTotal)/secs, float64(cmdTotal)/calls, float64(evalsha)/secs, float64(evalsha)/calls, float64(evalUS)/float64(max(evalsha, 1)))
		names := make([]string, 0, len(c1.calls))
		for k := range c1.calls {
			if c1.calls[k] > c0.calls[k] {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(out, " %s %.1f/s", k, float64(c1.calls[k]-c0.calls[k])/secs)
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "wire (HTTP bytes, no TCP/IP): %.0f bytes per status call sent, %.0f received\n",
		float64(w.tx)/float64(max(w.calls, 1)), float64(w.rx)/float64(max(w.calls, 1)))
	fmt.Fprintf(out, "connections (browser model, server idle timeout %s): %d of %d status calls (%.2f %%) came after the user's connection idled out and opened a new one; %d dials in all; a browser-faithful crowd holds one idle connection per user polling sooner than that: about %d open at once, the generator %d\n",
		r.cfg.idleTimeout, w.fresh, w.calls, 100*float64(w.fresh)/float64(max(w.calls, 1)), w.dials, r.polling, r.cfg.conns+r.cfg.burstConns*min(r.cfg.burst, 1))
	if b := r.burst; b != nil && b.calls > 0 {
		bc := &r.burstCheck
		fmt.Fprintf(out, "burst: %d enters over %s (%.0f/s asked), %d ok (%d WAITING, %d ENTERED), %d 503, %d other non-2xx, %d transport errors\n",
			b.calls, r.cfg.burstFor, float64(r.cfg.burst)/r.cfg.burstFor.Seconds(), b.ok, b.waiting, b.entered, b.err503, b.errOther, b.errTransport)
		fmt.Fprintf(out, "burst enter latency: p50 %s, p90 %s, p99 %s, p99.9 %s, max %s; schedule lag p99 %s, max %s; wire %.0f / %.0f bytes per enter\n",
			us(b.latency.quantile(0.5)), us(b.latency.quantile(0.9)), us(b.latency.quantile(0.99)), us(b.latency.quantile(0.999)), us(b.latency.max),
			us(b.lag.quantile(0.99)), us(b.lag.max), float64(b.tx)/float64(max(b.calls, 1)), float64(b.rx)/float64(max(b.calls, 1)))
		if m0, m1 := &r.g.burstSpan[0], &r.g.burstSpan[1]; m0.err == nil && m1.err == nil && m1.cpu.at.After(m0.cpu.at) {
			d := m1.cpu.at.Sub(m0.cpu.at).Seconds()
			tk := func(x int64) float64 { return float64(x) * 1e6 / float64(r.cfg.clkTck) }
			polls := m1.polls - m0.polls
			ev := m1.cmds.calls["evalsha"] - m0.cmds.calls["evalsha"]
			evUS := m1.cmds.usec["evalsha"] - m0.cmds.usec["evalsha"]
			fmt.Fprintf(out, "over the burst's %.1f s: %d enters and %d status calls; CPU server %.0f %% of a core, redis %.0f %%, generator %.0f %%; per enter + its share of polls: server %.1f µs, redis %.1f µs; evalsha %d (%.2f per enter, %.1f µs of scripts per enter), redis commands %.0f/s\n",
				d, b.calls, polls, tk(m1.cpu.server-m0.cpu.server)/1e4/d, tk(m1.cpu.redis-m0.cpu.redis)/1e4/d, tk(m1.cpu.self-m0.cpu.self)/1e4/d,
				tk(m1.cpu.server-m0.cpu.server)/float64(max(b.calls, 1)), tk(m1.cpu.redis-m0.cpu.redis)/float64(max(b.calls, 1)),
				ev, float64(ev)/float64(max(b.calls, 1)), float64(evUS)/float64(max(b.calls, 1)), float64(m1.cmds.total-m0.cmds.total)/d)
		}
		fmt.Fprintf(out, "burst check (Redis, in %s): %d acknowledged: %d waiting at their credential's seq, %d admitted, %d missing, %d at another seq, %d duplicate seqs, %d duplicate members, %d unreadable; %d places in the waiting ZSET at seq %d..%d (%d acknowledged still waiting, %d placed but never acknowledged); FIFO: %d ordered pairs, %d breaks %s\n",
			bc.checked.Round(time.Millisecond), bc.acked, bc.waiting, bc.entered, bc.missing, bc.wrongSeq, bc.dupSeq, bc.dupMember, bc.badToken,
			bc.inRange, bc.minSeq, bc.maxSeq, bc.stillWaiting, bc.notAckedButPlaced, bc.pairs, bc.fifoBreaks, bc.firstBreak)
	}
	if a, b := r.cpu[0].cpus, r.cpu[1].cpus; len(a) == len(b) {
		for i := range a {
			all := float64(max(b[i].all-a[i].all, 1))
			fmt.Fprintf(out, "%s: %.0f %% busy, of which softirq %.0f %% (/proc/stat)\n", a[i].name,
				100*float64(b[i].busy-a[i].busy)/all, 100*float64(b[i].softirq-a[i].softirq)/all)
		}
	}
	for _, p := range []int{phaseFill, phaseSettle} {
		s := &r.st[p]
		fmt.Fprintf(out, "(%s phase: %d status calls, p99 %s, max %s, %d 503, %d other errors)\n",
			phaseNames[p], s.calls, us(s.latency.quantile(0.99)), us(s.latency.max), s.err503, s.errOther+s.errTransport)
	}

	near := &w.learn[bandNear]
	fmt.Fprintf(out, "MILLION_RESULT cmds_per_s=%.0f evalsha_per_s=%.0f fresh_conns=%d tx_per_call=%.0f rx_per_call=%.0f ",
		float64(cmdTotal)/secs, float64(evalsha)/secs, w.fresh, float64(w.tx)/float64(max(w.calls, 1)), float64(w.rx)/float64(max(w.calls, 1)))
	if b := r.burst; b != nil && b.calls > 0 {
		fmt.Fprintf(out, "burst=%d burst_ok=%d burst_503=%d burst_p99_us=%d burst_max_us=%d burst_check_ok=%t ",
			b.calls, b.ok, b.err503, b.latency.quantile(0.99), b.latency.max, r.burstCheck.ok())
	}
	fmt.Fprintf(out, "users=%d waiting=%d window_s=%.0f rate=%.0f implied_rate=%.0f p50_us=%d p99_us=%d max_us=%d n503=%d errors=%d lag_p99_us=%d learn_near=%d learn_near_p99_ms=%d learn_near_max_ms=%d learn_far=%d learn_far_max_ms=%d server_us=%.1f redis_us=%.1f gen_us=%.1f server_pct=%.0f redis_pct=%.0f gen_pct=%.0f\n",
		r.cfg.users, r.waitingAfterFill, secs, rate, r.impliedRate, w.latency.quantile(0.5), w.latency.quantile(0.99), w.latency.max,
		w.err503, w.errOther+w.errTransport, w.lag.quantile(0.99), near.n, near.quantile(0.99), near.max,
		w.learn[bandFar].n, w.learn[bandFar].max, cpuUS(ds), cpuUS(dr), cpuUS(dg), cpuPct(ds), cpuPct(dr), cpuPct(dg))

	var missed []string
	if p99 := time.Duration(w.latency.quantile(0.99)) * time.Microsecond; p99 > r.cfg.targetP99 {
		missed = append(missed, fmt.Sprintf("status p99 %s > %s", p99, r.cfg.targetP99))
	}
	if w.err503 > 0 {
		missed = append(missed, fmt.Sprintf("%d answers 503", w.err503))
	}
	if ivl(near.max) > 1 {
		missed = append(missed, fmt.Sprintf("a user within 10 ticks learned of its admission %.2f intervals late", ivl(near.max)))
	}
	if near.n == 0 {
		missed = append(missed, "nobody was admitted in the window")
	}
	if b := r.burst; b != nil && r.cfg.burst > 0 {
		if p99 := time.Duration(b.latency.quantile(0.99)) * time.Microsecond; p99 > r.cfg.targetEnterP99 {
			missed = append(missed, fmt.Sprintf("burst enter p99 %s > %s", p99, r.cfg.targetEnterP99))
		}
		if b.err503 > 0 {
			missed = append(missed, fmt.Sprintf("%d burst enters answered 503", b.err503))
		}
		if b.ok != uint64(r.cfg.burst) {
			missed = append(missed, fmt.Sprintf("%d of %d burst enters acknowledged", b.ok, r.cfg.burst))
		}
		if r.cfg.redisAddr != "" && !r.burstCheck.ok() {
			missed = append(missed, "the burst check found lost, duplicated or out-of-order places")
		}
	}
	if len(missed) > 0 {
		fmt.Fprintf(out, "targets: MISSED: %s\n", strings.Join(missed, "; "))
		return errTargetMissed
	}
	fmt.Fprintln(out, "targets: met (status p99, no 503, learned of admission within one interval)")
	return nil
}

// us formats a µs count.
func us(v int64) string {
	return (time.Duration(v) * time.Microsecond).Round(10 * time.Microsecond).String()
}

// redisCmds is INFO commandstats at one moment: calls and µs per command,
// and total_commands_processed.
type redisCmds struct {
	calls, usec map[string]int64
	total       int64
}

// redisCommands reads INFO commandstats and INFO stats (empty when addr is).
func redisCommands(ctx context.Context, addr string) (redisCmds, error) {
	rc := redisCmds{calls: map[string]int64{}, usec: map[string]int64{}}
	if addr == "" {
		return rc, nil
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	s, err := c.Info(ctx, "commandstats", "stats").Result()
	if err != nil {
		return rc, fmt.Errorf("redis INFO commandstats: %w", err)
	}
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			if _, err := fmt.Sscan(v, &rc.total); err != nil {
				return rc, fmt.Errorf("redis INFO stats: %q", line)
			}
			continue
		}
		// cmdstat_evalsha:calls=12,usec=345,usec_per_call=28.75,...
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		for f := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			var n int64
			switch k {
			case "calls":
				_, err = fmt.Sscan(v, &n)
				rc.calls[name] = n
			case "usec":
				_, err = fmt.Sscan(v, &n)
				rc.usec[name] = n
			}
			if err != nil {
				return rc, fmt.Errorf("redis INFO commandstats: %q", line)
			}
		}
	}
	return rc, nil
}
