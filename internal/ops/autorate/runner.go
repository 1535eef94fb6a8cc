package autorate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/safeurl"
)

// Refresh is how often each replica reads every queue's controller
// settings and origin report from Redis, and how often the probe's holder
// polls origin_probe_url: two small reads a second per queue, off every
// request path.
const Refresh = time.Second

// Span is the longest stretch of answers a judgement looks at: the
// answers since the last step, at most this far back.
const Span = 10 * time.Second

// BlindSpan is how far back a judgement looks when the page answered
// too few of the requests sent within Span: six times as far.
const BlindSpan = 6 * Span

// MinStepGap is the least time between two steps: the order page shows
// the effect of a step only seconds later (admitted users poll, read the
// page, then order), and a controller stepping every interval of a
// short refill interval would step again before seeing it. With the
// default 5 s interval it changes nothing.
const MinStepGap = 3 * time.Second

// MinGapAfterDecrease is the least time after a decrease before the next
// step: the page needs far longer to show a decrease than an increase.
// Users admitted before it are still reading the page, so its p95 goes on
// rising for seconds, and then the backlog built while the rate was too
// high drains only as fast as the page serves more than the new rate.
// Stepping again meanwhile (6 s in an earlier version) cut the rate to
// half of what the page serves, and back (scripts/adapt.sh).
const MinGapAfterDecrease = 4 * MinStepGap

// Worse is how many times the p95 that made a decrease the p95 must be
// to step again within MinGapAfterDecrease.
const Worse = 2.0

// probeTimeout bounds one probe, and maxProbeBody what of its answer is
// read.
const (
	probeTimeout = 5 * time.Second
	maxProbeBody = 1 << 16
)

// leaseTTL is the probe lease's life: a holder that stops is replaced
// within it.
const leaseTTL = 3 * Refresh

// Actor names the controller in the audit log, as its Action.
const Actor = actor.KindAutomatic

// self is the controller as the audit log's actor.
var self = actor.Actor{Kind: actor.KindAutomatic, Name: "automatic"}

// Options are what a Runner is made of.
type Options struct {
	Store *queue.Store
	Redis Redis
	// Audit records each step (nil: not recorded).
	Audit *audit.Log
	Log   *slog.Logger
	// Client polls the probe URLs (nil: safeurl's client under
	// ProbePolicy, with a 5 s timeout: no redirects, every dial checked).
	Client *http.Client
	// ProbePolicy is what a probe URL may reach:
	// never link-local (cloud metadata), loopback and private ranges only
	// when allowed (WAITROOM_ORIGIN_PROBE_ALLOW_PRIVATE). A stored URL it
	// refuses is not polled.
	ProbePolicy safeurl.Policy
	// Timeout bounds each Redis call.
	Timeout time.Duration
}

// Runner is one replica's controller: it proposes each queue's effective
// refill to the tick (Propose, Ticked, for internal/engine/scheduler), keeps the
// reverse-proxy gate's view of the order page (Observe), stores what the site
// pushes (Report), and polls a probe URL while it holds the probe lease
// (Run).
type Runner struct {
	o      Options
	store  store
	window *Window // the proxy's view of upstream answers
	probes *Window // this replica's probes (while it holds a lease)
	token  string  // this replica's lease token

	// on says, per queue, whether its controller is on, as last read:
	// Observe records nothing for a queue that is off, so the gate's path
	// pays one atomic load then. Its keys never change after New.
	on map[string]*atomic.Bool

	mu     sync.Mutex
	queues map[string]*state
}

// state is what the runner last read of one queue.
type state struct {
	st       queue.AdaptState
	read     bool
	report   Report
	reported bool      // report is fresh
	stepAt   time.Time // when this replica last saw the effective refill change
	// stepP95 is the p95 that made the last decrease this replica
	// proposed and its tick stored (0: none, or another replica's step),
	// for Draining; proposed is the p95 of the proposal in flight.
	stepP95, proposed time.Duration
	down              bool // the last step was a decrease
}

// New returns a runner; start its reads with Run.
func New(o Options) (*Runner, error) {
	if o.Store == nil || o.Redis == nil || o.Log == nil || o.Timeout <= 0 {
		return nil, errors.New("autorate: a runner needs a store, Redis, a logger and a timeout")
	}
	if o.Client == nil {
		o.Client = safeurl.NewClient(probeTimeout, o.ProbePolicy, 2)
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	r := &Runner{o: o, store: store{rdb: o.Redis, timeout: o.Timeout}, window: NewWindow(), probes: NewWindow(),
		token: hex.EncodeToString(b[:]), queues: map[string]*state{}, on: map[string]*atomic.Bool{}}
	for _, q := range o.Store.Queues() {
		r.queues[q] = &state{}
		r.on[q] = &atomic.Bool{}
	}
	return r, nil
}

// Observe records one upstream answer for queue, as the reverse-proxy
// gate saw it (status 0: none came), to a request of the admission voice
// (its sub; proxy.Observe). It counts from when the request was sent:
// a judgement after a step looks only at requests sent since, not at the
// backlog of those sent before, which would make it step again for what
// the last step already answers.
func (r *Runner) Observe(queue, voice string, status int, took time.Duration) {
	if on, ok := r.on[queue]; ok && on.Load() {
		r.window.Observe(queue, voice, status, took, time.Now().Add(-took))
	}
}

// Report stores what the site says of its own health, for every replica.
func (r *Runner) Report(ctx context.Context, q string, rep Report) error {
	if !r.o.Store.Has(q) {
		return queue.ErrUnknownQueue
	}
	if err := rep.Validate(); err != nil {
		return err
	}
	return r.store.write(ctx, q, rep, SourcePush)
}

// Run reads every queue's settings and report each Refresh, and probes
// while it holds a queue's lease, until ctx ends.
func (r *Runner) Run(ctx context.Context) {
	t := time.NewTicker(Refresh)
	defer t.Stop()
	for {
		for q := range r.queues {
			r.refresh(ctx, q)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// refresh reads queue q's settings and report, and probes it if this
// replica holds its lease. A failed read keeps what was read before.
func (r *Runner) refresh(ctx context.Context, q string) {
	st, err := r.o.Store.Adapt(ctx, q)
	if err != nil {
		r.o.Log.Debug("autorate: read settings", "queue", q, "err", err)
		return
	}
	if st.Enabled && st.ProbeURL != "" {
		r.probe(ctx, q, st.ProbeURL)
	}
	rep, fresh, err := r.store.read(ctx, q)
	if err != nil {
		r.o.Log.Debug("autorate: read report", "queue", q, "err", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.queues[q]
	if s.read && st.RefillEffective != s.st.RefillEffective {
		s.stepAt = time.Now() // another replica stepped: judge the answers since
		s.stepP95 = 0         // by a p95 this replica does not know
		s.down = st.RefillEffective < s.st.RefillEffective
	}
	s.st, s.read = st, true
	r.on[q].Store(st.Enabled)
	if err == nil {
		s.report, s.reported = rep, fresh
	}
}

// probe polls url once if this replica holds q's probe lease, and then
// stores the p95 and error rate of its recent probes as q's report.
func (r *Runner) probe(ctx context.Context, q, url string) {
	if err := r.o.ProbePolicy.CheckURL(url); err != nil {
		r.o.Log.Debug("autorate: probe URL refused", "queue", q, "err", err)
		return
	}
	held, err := r.store.hold(ctx, q, r.token, leaseTTL)
	if err != nil || !held {
		return
	}
	start := time.Now()
	status := 0
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err == nil {
		if resp, err := r.o.Client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxProbeBody))
			resp.Body.Close()
			status = resp.StatusCode
		}
	}
	r.probes.Observe(q, "", status, time.Since(start), start)
	// A probe a second: a report of at least a few of them.
	sig, ok := r.probes.pooled(q, time.Now().Add(-Span), 3)
	if !ok {
		return
	}
	if err := r.store.write(ctx, q, Report{P95: sig.P95, ErrorRate: sig.ErrorRate}, SourceProbe); err != nil {
		r.o.Log.Debug("autorate: write probe report", "queue", q, "err", err)
	}
}

// Propose is the effective refill this replica proposes for q's next
// tick (internal/engine/scheduler calls it before each tick call): none while
// the controller is off, or nothing says how the order page is doing, or the
// step would change nothing. The proxy's own view comes first; a fresh
// pushed or probed report stands in when the proxy saw too few answers.
func (r *Runner) Propose(q string) queue.Proposal {
	r.mu.Lock()
	s, ok := r.queues[q]
	if !ok || !s.read || !s.st.Enabled {
		r.mu.Unlock()
		return queue.Proposal{}
	}
	st, report, reported, since, stepP95, down := s.st, s.report, s.reported, s.stepAt, s.stepP95, s.down
	r.mu.Unlock()
	gap := time.Since(since)
	if gap < MinStepGap {
		return queue.Proposal{}
	}
	sig, ok := r.window.Signal(q, later(since, time.Now().Add(-Span)))
	if !ok {
		// Slower than Span, the page answers none of the requests sent
		// within it, and a controller looking only there would hold, blind,
		// while the backlog grows (a run with a gentler cut stayed at 1.4x
		// the page's capacity for two minutes): all since the step, then,
		// up to BlindSpan back.
		sig, ok = r.window.Signal(q, later(since, time.Now().Add(-BlindSpan)))
	}
	if !ok && reported {
		sig, ok = Signal{P95: report.P95, ErrorRate: report.ErrorRate}, true
	}
	// Within MinGapAfterDecrease of a decrease, only a p95 at least
	// Worse × the one that made it steps again: the cut fell far short
	// (from a start at twice the page's capacity, a first cut of 15 %
	// held for 12 s let the p95 pass 8 s).
	if down && gap < MinGapAfterDecrease && (stepP95 <= 0 || !ok || float64(sig.P95) < Worse*float64(stepP95)) {
		return queue.Proposal{}
	}
	set := Settings{Enabled: true, RefillSize: st.RefillSize, MinRefill: st.MinRefill, TargetP95: st.TargetP95, MaxErrorRate: st.MaxErrorRate}
	next := Next(set, st.RefillEffective, Draining(set, sig, Judge(set, sig, ok), stepP95), sig)
	if next == st.RefillEffective {
		return queue.Proposal{}
	}
	r.mu.Lock()
	s.proposed = sig.P95
	r.mu.Unlock()
	return queue.Proposal{Refill: next, Base: st.RefillEffective}
}

// Ticked hears how q's tick call went with proposal p: an applied tick's
// budget is the effective refill from now on; a step this replica's tick
// stored goes in the audit log, as the controller's.
func (r *Runner) Ticked(q string, p queue.Proposal, res queue.TickResult) {
	if !res.Applied {
		return
	}
	r.mu.Lock()
	s, ok := r.queues[q]
	if ok && s.read && int(res.Budget) != s.st.RefillEffective {
		if res.Adapted && int(res.Budget) < p.Base {
			s.stepP95 = s.proposed // this replica's decrease, for Draining
		} else if int(res.Budget) > s.st.RefillEffective {
			s.stepP95 = 0
		}
		s.down = int(res.Budget) < s.st.RefillEffective
		s.st.RefillEffective = int(res.Budget)
		s.stepAt = time.Now()
	}
	r.mu.Unlock()
	if !ok || !res.Adapted || int(res.Budget) == p.Base {
		return
	}
	r.o.Log.Info("autorate: effective refill changed", "queue", q, "from", p.Base, "to", res.Budget)
	if r.o.Audit == nil {
		return
	}
	// Off the tick's path: the scheduler's next call is not held up.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), r.o.Timeout)
		defer cancel()
		_, err := r.o.Audit.Record(ctx, audit.Entry{Queue: q, Action: Actor, Actor: &self, Changes: []audit.Change{
			{Field: "refill_effective", Old: audit.Value(p.Base), New: audit.Value(res.Budget)},
		}})
		if err != nil {
			r.o.Log.Warn("autorate: audit", "queue", q, "err", err)
		}
	}()
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
