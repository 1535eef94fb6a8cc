// Package scheduler runs the refill tick of every queue on every replica.
//
// There is no leader: each replica calls the tick several times per
// interval, and tick.lua applies it only when due, a full interval after
// the last applied tick (Redis clock). A gocron distributed locker would
// not give "once per interval" (each replica's timer fires at its own
// moment and takes the free lock in turn), and a leader lease would add a
// failover delay; the idempotent script needs neither.
//
// A tick applied late delays every later one by as much (tick.lua never
// makes it up with a shorter interval), so a call that finds the tick due
// before the job's next run waits until then and calls again: ticks are
// applied within a few milliseconds of being due, not up to a period
// late, and the intervals stay the configured length.
package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// Period returns how often to call the tick for a refill interval: a tenth
// of it, at most one second. It is queue.TickPeriod, kept in package queue
// beside the poll policy that counts on it (Ticket.PollAfter).
func Period(interval time.Duration) time.Duration {
	return queue.TickPeriod(interval)
}

// tickTimeout bounds one tick call; singleton mode skips the runs that
// would overlap a slow one.
const tickTimeout = time.Second

// maxWakes bounds the calls one run makes when the tick is due before the
// next run: one is enough (the call then applies the tick, and the next
// is an interval away, more than a period); a second covers a call that
// reached Redis a millisecond early.
const maxWakes = 2

// Scheduler calls Store.Tick for each queue on a fixed period.
type Scheduler struct {
	s gocron.Scheduler
}

// Observer hears every tick call, for metrics (internal/ops/metrics), so that
// this package knows nothing of Prometheus: the result (Applied false when
// another call already applied the interval's tick), how long the call
// took, or why it failed. It must be safe for concurrent use.
type Observer interface {
	Tick(queue string, res queue.TickResult, took time.Duration, err error)
}

// Adapter proposes the effective refill of each tick (internal/ops/autorate, the
// order page's health driving the rate) and hears how the tick went, so
// that this package knows nothing of the controller. It must be safe for
// concurrent use.
type Adapter interface {
	Propose(queue string) queue.Proposal
	Ticked(queue string, p queue.Proposal, res queue.TickResult)
}

// Start begins calling the tick of each queue every period, telling obs
// (nil: nobody) how each call went, with each tick's effective refill
// proposed by ad (nil: none).
func Start(store *queue.Store, period time.Duration, logger *slog.Logger, obs Observer, ad Adapter) (*Scheduler, error) {
	s, err := gocron.NewScheduler(gocron.WithLogger(logger), gocron.WithStopTimeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	for _, name := range store.Queues() {
		t := &ticker{store: store, queue: name, period: period, log: logger.With("queue", name), obs: obs, adapt: ad}
		_, err := s.NewJob(
			gocron.DurationJob(period),
			gocron.NewTask(t.run),
			gocron.WithName("tick:"+name),
			// A slow tick must not pile up behind itself.
			gocron.WithSingletonMode(gocron.LimitModeReschedule),
			gocron.WithStartAt(gocron.WithStartImmediately()),
		)
		if err != nil {
			_ = s.Shutdown()
			return nil, fmt.Errorf("scheduler: job for %s: %w", name, err)
		}
	}
	s.Start()
	return &Scheduler{s: s}, nil
}

// Stop stops the jobs and waits for a running tick to end.
func (s *Scheduler) Stop() error {
	return s.s.Shutdown()
}

type ticker struct {
	store   *queue.Store
	queue   string
	period  time.Duration // between the job's runs
	log     *slog.Logger
	obs     Observer // nil: nobody
	adapt   Adapter  // nil: no proposals
	failing bool     // log a failure once, not every period, until it recovers
}

// run calls the tick, and again when the next tick is due before the
// job's next run.
func (t *ticker) run(jobCtx context.Context) {
	res, ok := t.call(jobCtx)
	for range maxWakes {
		if !ok || res.UntilNext <= 0 || res.UntilNext >= t.period {
			return
		}
		select {
		case <-jobCtx.Done():
			return
		case <-time.After(res.UntilNext):
		}
		res, ok = t.call(jobCtx)
	}
}

// call makes one tick call, tells the observer and logs how it went; ok
// is false when it failed.
func (t *ticker) call(jobCtx context.Context) (res queue.TickResult, ok bool) {
	// A call once made runs to its end (or tickTimeout) though Stop cancels
	// jobCtx: cut short, it could be applied in Redis and never heard, and
	// the observer's count of applied ticks would miss it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(jobCtx), tickTimeout)
	defer cancel()
	start := time.Now()
	var p queue.Proposal
	if t.adapt != nil {
		p = t.adapt.Propose(t.queue)
	}
	res, err := t.store.TickWith(ctx, t.queue, p)
	if err == nil && t.adapt != nil {
		t.adapt.Ticked(t.queue, p, res)
	}
	stopping := jobCtx.Err() != nil
	if stopping && err != nil {
		return res, false // a failure while stopping is not worth a warning
	}
	if t.obs != nil {
		t.obs.Tick(t.queue, res, time.Since(start), err)
	}
	if err != nil {
		if !t.failing {
			t.log.Warn("tick failed", "err", err)
			t.failing = true
		}
		return res, false
	}
	if t.failing {
		t.log.Info("tick recovered")
		t.failing = false
	}
	if stopping {
		return res, false
	}
	if res.Applied {
		t.log.Debug("tick applied", "moved", res.Moved, "waiting", res.Waiting,
			"tokens", res.Tokens, "purged", res.Purged, "admitted", res.Admitted, "late", res.Late)
	}
	// The replica's snapshot of the line, for the status of places far
	// from the head (queue/snapshot.go): after a tick it applied, else at
	// most about once a second. A failure only leaves it to age, and then
	// every status asks Redis.
	if err := t.store.RefreshSnapshot(ctx, t.queue, res.Applied); err != nil && jobCtx.Err() == nil {
		t.log.Debug("snapshot failed", "err", err)
	}
	return res, true
}
