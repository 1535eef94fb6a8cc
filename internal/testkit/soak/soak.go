package soak

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/trust/place"
)

// Options configure a soak run.
type Options struct {
	Seed     uint64
	Users    int           // simulated users per phase
	Replicas int           // replicas of the service
	Duration time.Duration // of each phase's load
	Faults   []string      // one phase each

	Bin         string // the waitroom binary; "" builds it (go build) into Dir
	RedisServer string // redis-server to run; "" finds it on PATH
	Dir         string // where the processes keep their files and logs; "" a temporary one, removed after

	RefillSize     int
	RefillInterval time.Duration
	RequestTimeout time.Duration // WAITROOM_REQUEST_TIMEOUT
	// Slack is what a call may take beyond the request timeout before it
	// counts as too long.
	Slack time.Duration

	Log io.Writer // progress; nil: none

	secret string
}

// defaults fills the options left zero.
func (o *Options) defaults() {
	if o.Users == 0 {
		o.Users = 1000
	}
	if o.Replicas == 0 {
		o.Replicas = 3
	}
	if o.Duration == 0 {
		o.Duration = 30 * time.Second
	}
	if o.Faults == nil {
		o.Faults = AllFaults
	}
	if o.RefillSize == 0 {
		o.RefillSize = 20
	}
	if o.RefillInterval == 0 {
		o.RefillInterval = time.Second
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 2 * time.Second
	}
	if o.Slack == 0 {
		o.Slack = time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// PhaseResult is one phase: its fault and what the checks found.
type PhaseResult struct {
	Fault    string
	Injected bool          // the fault was applied and healed
	At       time.Duration // when it came, from the start of the load
	Lasted   time.Duration // how long the fault lasted
	// WaitShort is the enters answered although the replica had not
	// acknowledged them within the WAIT timeout (Sentinel phases; -1:
	// not known, WAIT off or a replica's count unreadable).
	WaitShort int
	Report    Report
	Record    Record // what the checks looked at (cmd/waitroom-soak -ops writes it out)
	Err       error  // the phase could not run (environment, injection)
}

// Failed reports whether the phase broke an invariant or did not run.
func (p PhaseResult) Failed() bool {
	return p.Err != nil || p.Report.Failed() || (p.Fault != FaultNone && !p.Injected)
}

// Run runs one phase per fault and returns their results.
func Run(ctx context.Context, o Options) ([]PhaseResult, error) {
	o.defaults()
	var secret [32]byte
	_, _ = rand.Read(secret[:])
	o.secret = hex.EncodeToString(secret[:])
	if o.RedisServer == "" {
		p, err := exec.LookPath("redis-server")
		if err != nil {
			return nil, fmt.Errorf("soak: redis-server not found (scripts/install-tools.sh test installs it): %w", err)
		}
		o.RedisServer = p
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "waitroom-soak-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	if o.Bin == "" {
		bin, err := Build(ctx, dir, o.Log)
		if err != nil {
			return nil, err
		}
		o.Bin = bin
	}
	var out []PhaseResult
	for i, fault := range o.Faults {
		pdir := filepath.Join(dir, fmt.Sprintf("phase%d-%s", i, fault))
		if err := os.MkdirAll(pdir, 0o700); err != nil {
			return out, err
		}
		fmt.Fprintf(o.Log, "soak: phase %d: %s, %d users, %d replicas, %s (files in %s)\n", i, fault, o.Users, o.Replicas, o.Duration, pdir)
		r := runPhase(ctx, o, fault, o.Seed+uint64(i), pdir)
		if r.Err != nil {
			fmt.Fprintf(o.Log, "soak: phase %d: %v\n", i, r.Err)
		}
		out = append(out, r)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}

// Build compiles the waitroom binary into dir and returns its path. A
// caller that bounds the soak's own time (a test's deadline) builds first,
// so that a slow compile on a busy machine does not eat the soak's time.
func Build(ctx context.Context, dir string, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	bin := filepath.Join(dir, "waitroom")
	fmt.Fprintln(log, "soak: building the waitroom binary")
	// Built as scripts/build-images.sh builds the service image, so
	// that on a fresh machine the two share one compile (about 100 CPU
	// seconds here); without -race: the soak checks the service, and
	// the race detector would slow it several times over.
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "github.com/waitroom/waitroom/cmd/waitroom")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stderr = log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("soak: go build: %w (run from the waitroom checkout, or give -bin)", err)
	}
	return bin, nil
}

// phase is the shared state of one phase's users.
type phase struct {
	o    Options
	stop chan struct{} // closed when the load ends
	// faultOn is set while the fault is in force; healed is when it
	// healed (UnixNano, 0: not yet).
	faultOn atomic.Bool
	healed  atomic.Int64
}

// settled reports whether an Unknown call that ended at t can no longer
// take effect: no fault in force, and Settle passed since both t and the
// fault's healing.
func (p *phase) settled(t time.Time) bool {
	if p.faultOn.Load() {
		return false
	}
	end := t
	if h := time.Unix(0, p.healed.Load()); h.After(end) {
		end = h
	}
	return time.Since(end) > p.settle()
}

// settle is how long an Unknown write may still land after it ended or
// its fault healed: a script the service wrote to Redis before giving up
// at the request timeout runs when Redis gets to it; by then the service
// has closed that connection. Twice the request timeout covers it.
func (p *phase) settle() time.Duration { return 2 * p.o.RequestTimeout }

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// runPhase runs one phase: the load, with the fault a third of the way
// in; then, once every Unknown call has landed or never will, each
// member's last word from the service, Redis's state, and the checks.
func runPhase(ctx context.Context, o Options, fault string, seed uint64, dir string) PhaseResult {
	res := PhaseResult{Fault: fault, WaitShort: -1}
	e, err := startEnv(ctx, o, dir, sentinelFault(fault))
	if err != nil {
		res.Err = err
		return res
	}
	defer e.close()

	p := &phase{o: o, stop: make(chan struct{})}
	users, transport, err := p.newUsers(e, seed)
	if err != nil {
		res.Err = err
		return res
	}
	defer transport.CloseIdleConnections()
	start := time.Now()
	window, err := p.load(ctx, e, users, fault, seed)
	if err != nil {
		res.Err = fmt.Errorf("%s: %w", fault, err)
	} else {
		res.Injected = fault != FaultNone
		res.At = window.Start.Sub(start)
		res.Lasted = window.End.Sub(window.Start)
	}
	fmt.Fprintf(o.Log, "soak: the fault healed after %s; settling, then asking every user where they stand\n", time.Since(start).Round(time.Millisecond))

	sleep(ctx, time.Until(window.End.Add(p.settle())))
	if e.sentinel {
		if n, err := e.waitShort(ctx); err == nil {
			res.WaitShort = n
		} else {
			fmt.Fprintf(o.Log, "soak: the replicas' WAIT shortfalls: %v\n", err)
		}
	}
	run, err := p.record(ctx, e, users, window)
	if err != nil {
		res.Err = errors.Join(res.Err, err)
		return res
	}
	res.Report, res.Record = Check(run), run
	return res
}

// newUsers makes the phase's users, each with a random source of its own
// and one client address, sharing one HTTP transport (the caller closes
// its idle connections).
func (p *phase) newUsers(e *env, seed uint64) ([]*user, *http.Transport, error) {
	// The replicas sign place credentials with o.secret (replicaEnv), so
	// the soak checks each one it is handed.
	places, err := place.New([]byte(p.o.secret))
	if err != nil {
		return nil, nil, err
	}
	transport := &http.Transport{MaxIdleConnsPerHost: 512, IdleConnTimeout: 30 * time.Second}
	// The client's own bound is well past the longest a call may take,
	// so a call that hangs shows as too long instead of being cut short
	// at the limit.
	hc := &http.Client{Transport: transport, Timeout: 3*p.o.RequestTimeout + 5*time.Second}
	users := make([]*user, p.o.Users)
	for i := range users {
		rng := mrand.New(mrand.NewPCG(seed, uint64(i)))
		users[i] = &user{p: p, rng: rng, c: &caller{http: hc, urls: e.urls, addr: clientAddr(i), pick: rng.IntN, places: places}}
	}
	return users, transport, nil
}

// load runs the users for the phase's duration with the fault a third of
// the way in, and returns the fault's window (start, heal) once both are
// over.
func (p *phase) load(ctx context.Context, e *env, users []*user, fault string, seed uint64) (Window, error) {
	start := time.Now()
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u.run(ctx, p.o.Duration)
		}()
	}
	var window Window
	faultDone := make(chan error, 1)
	go func() {
		sleep(ctx, p.o.Duration/3)
		p.faultOn.Store(true)
		w, err := e.inject(ctx, fault, mrand.New(mrand.NewPCG(seed, 1<<40)))
		window = w
		p.healed.Store(w.End.UnixNano())
		p.faultOn.Store(false)
		faultDone <- err
	}()

	sleep(ctx, p.o.Duration)
	close(p.stop)
	wg.Wait()
	fmt.Fprintf(p.o.Log, "soak: load ended after %s\n", time.Since(start).Round(time.Millisecond))
	err := <-faultDone
	return window, err
}

// record gathers what the checks look at: every user's calls, each
// member's last word from the service, and Redis's state.
func (p *phase) record(ctx context.Context, e *env, users []*user, window Window) (Record, error) {
	var ops []Op
	anonymous := 0
	for _, u := range users {
		ops = append(ops, u.ops...)
		anonymous += u.anonymous
	}
	ops = append(ops, finalStatus(ctx, users)...)

	snap, err := snapshot(ctx, e)
	if err != nil {
		return Record{}, fmt.Errorf("snapshot: %w", err)
	}
	run := Record{
		RefillSize: p.o.RefillSize,
		MaxRequest: p.o.RequestTimeout + p.o.Slack,
		Settle:     p.settle(),
		Ops:        ops,
		Snap:       snap,
		Anonymous:  anonymous,
	}
	if !window.Start.IsZero() {
		run.Faults = []Window{window}
	}
	return run, nil
}

// finalStatus asks, for every member a user ever held, where it stands,
// trying each replica a few times: the answers are ops like the others.
func finalStatus(ctx context.Context, users []*user) []Op {
	var (
		mu  sync.Mutex
		out []Op
		wg  sync.WaitGroup
		sem = make(chan struct{}, 32)
	)
	for _, u := range users {
		for _, m := range u.members {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				c := *u.c
				c.token, c.member = m.token, m.member
				for try := 0; try < 20 && ctx.Err() == nil; try++ {
					r := c.do(ctx, Status)
					if r.op.Outcome == OK {
						mu.Lock()
						out = append(out, r.op)
						mu.Unlock()
						return
					}
					sleep(ctx, 250*time.Millisecond)
				}
			}()
		}
	}
	wg.Wait()
	return out
}

// snapshot reads the queue's state from the primary.
func snapshot(ctx context.Context, e *env) (Snapshot, error) {
	addr, err := e.primaryAddr(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	s := Snapshot{Waiting: map[string]int64{}, Entered: map[string]int64{}}
	// One transaction: the replicas still tick while the snapshot is
	// read, and a tick between two separate reads (the line, then the
	// entered set) showed its admissions in both.
	var waiting, entered *redis.ZSliceCmd
	var history *redis.StringSliceCmd
	var tickCmd *redis.SliceCmd
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		waiting = p.ZRangeWithScores(ctx, rediskeys.Waiting(Queue), 0, -1)
		entered = p.ZRangeWithScores(ctx, rediskeys.Entered(Queue), 0, -1)
		history = p.LRange(ctx, rediskeys.History(Queue), 0, -1)
		tickCmd = p.HMGet(ctx, rediskeys.Tick(Queue), "at_ms", "moved", "direct")
		return nil
	}); err != nil {
		return s, err
	}
	for cmd, into := range map[*redis.ZSliceCmd]map[string]int64{waiting: s.Waiting, entered: s.Entered} {
		for _, z := range cmd.Val() {
			into[z.Member.(string)] = int64(z.Score)
		}
	}
	for _, h := range history.Val() {
		f := strings.Split(h, ":")
		if len(f) < 2 {
			return s, fmt.Errorf("odd history entry %q", h)
		}
		at, err1 := strconv.ParseInt(f[0], 10, 64)
		n, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return s, fmt.Errorf("odd history entry %q", h)
		}
		s.History = append(s.History, Interval{at, n})
	}
	// The interval in progress: the last tick's moves and the direct
	// admissions since.
	tick := tickCmd.Val()
	if at := toInt(tick[0]); at > 0 {
		s.History = append(s.History, Interval{at, toInt(tick[1]) + toInt(tick[2])})
	}
	return s, nil
}

func toInt(v any) int64 {
	s, _ := v.(string)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
