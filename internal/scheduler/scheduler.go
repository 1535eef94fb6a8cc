// Package scheduler runs the refill tick of every queue on every replica.
//
// There is no leader: each replica calls the tick several times per
// interval, and tick.lua applies it only once per interval of the Redis
// clock. A gocron distributed locker would not give "once per interval"
// (each replica's timer fires at its own moment and takes the free lock in
// turn), and a leader lease would add a failover delay; the idempotent
// script needs neither.
package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/waitroom/waitroom/internal/queue"
)

// ChecksPerInterval is how often per refill interval a replica calls the
// tick. More checks apply each tick sooner after its interval starts.
const ChecksPerInterval = 10

// Period returns how often to call the tick for a refill interval: a tenth
// of it, at most one second.
func Period(interval time.Duration) time.Duration {
	return min(interval/ChecksPerInterval, time.Second)
}

// tickTimeout bounds one tick call; singleton mode skips the runs that
// would overlap a slow one.
const tickTimeout = time.Second

// Scheduler calls Store.Tick for each queue on a fixed period.
type Scheduler struct {
	s gocron.Scheduler
}

// Observer hears every tick call, for metrics (internal/metrics), so that
// this package knows nothing of Prometheus: the result (Applied false when
// another call already applied the interval's tick), how long the call
// took, or why it failed. It must be safe for concurrent use.
type Observer interface {
	Tick(queue string, res queue.TickResult, took time.Duration, err error)
}

// Start begins calling the tick of each queue every period, telling obs
// (nil: nobody) how each call went.
func Start(store *queue.Store, period time.Duration, logger *slog.Logger, obs Observer) (*Scheduler, error) {
	s, err := gocron.NewScheduler(gocron.WithLogger(logger), gocron.WithStopTimeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	for _, name := range store.Queues() {
		t := &ticker{store: store, queue: name, log: logger.With("queue", name), obs: obs}
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
	log     *slog.Logger
	obs     Observer // nil: nobody
	failing bool     // log a failure once, not every period, until it recovers
}

func (t *ticker) run(jobCtx context.Context) {
	ctx, cancel := context.WithTimeout(jobCtx, tickTimeout)
	defer cancel()
	start := time.Now()
	res, err := t.store.Tick(ctx, t.queue)
	if jobCtx.Err() != nil {
		return // stopping: a call cut short is no failed tick
	}
	if t.obs != nil {
		t.obs.Tick(t.queue, res, time.Since(start), err)
	}
	if err != nil {
		if !t.failing {
			t.log.Warn("tick failed", "err", err)
			t.failing = true
		}
		return
	}
	if t.failing {
		t.log.Info("tick recovered")
		t.failing = false
	}
	if res.Applied {
		t.log.Debug("tick applied", "moved", res.Moved, "waiting", res.Waiting,
			"tokens", res.Tokens, "purged", res.Purged, "admitted", res.Admitted, "late", res.Late)
	}
}
