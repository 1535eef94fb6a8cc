package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/config"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/engine/scheduler"
	"github.com/waitroom/waitroom/internal/gate/command"
	"github.com/waitroom/waitroom/internal/gate/failopen"
	"github.com/waitroom/waitroom/internal/hygiene/loglimit"
	"github.com/waitroom/waitroom/internal/hygiene/netclass"
	"github.com/waitroom/waitroom/internal/infra/redisconn"
	"github.com/waitroom/waitroom/internal/ops/autorate"
	"github.com/waitroom/waitroom/internal/ops/metrics"
	"github.com/waitroom/waitroom/internal/ops/paid"
	"github.com/waitroom/waitroom/internal/ops/webhook"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
)

// app is the service as newApp wires it: its parts, the background
// workers run starts before it serves (lifecycle.go), and what newApp
// opened, closed in reverse once those have stopped.
type app struct {
	cfg config.Config
	log *slog.Logger

	redisOpts *redis.UniversalOptions
	rdb       redis.UniversalClient
	store     *queue.Store
	obs       observers
	interval  time.Duration // the tick period the stored settings ask for
	trust     trust         // trust.go

	networks *netclass.Watcher   // the operator's network classes; nil: none
	human    *humancheck.Checker // the human check's provider; nil: none

	moves     *handoff.Tracker
	handoffs  *handoff.Service
	adapter   *autorate.Runner
	failOpens *failopen.Recorder
	commands  *command.Runner // the order page's commands (done, extend)
	admin     adminCreds      // admin.go

	srv *http.Server
	ln  net.Listener

	workers []worker       // started in order, stopped in reverse
	closers []func() error // closed in reverse, after the workers stopped
}

// observers are the metrics' ears in the other parts: all nil when the
// metrics are off or their listener could not open.
type observers struct {
	tick       scheduler.Observer
	http       func(http.Handler) http.Handler
	hook       webhook.Observer
	failedOpen func(queue string)                  // waitroom_gate_fail_open_total
	proxyCut   func(reason string)                 // waitroom_proxy_cut_total
	command    func(queue, command, result string) // waitroom_gate_commands_total
	paid       paid.Observer                       // what visitors paid: waitroom_queue_pow_*, _human_checks_total
}

// newApp wires config → Redis → store → trust → workers → gate → HTTP, in
// that order, each step using what the ones before it built. Only the
// metrics listener serves yet; on error, what was opened is closed.
func newApp(ctx context.Context, cfg config.Config, log *slog.Logger) (*app, error) {
	a := &app{cfg: cfg, log: log}
	for _, step := range []func(context.Context) error{
		a.connect,
		a.addDefences,
		a.openStore,
		a.waitForRedis,
		a.addHandoffs,
		a.addAdmin,
		a.addAdapter,
		a.addScheduler,
		a.addWebhooks,
		a.addServer, // server.go, with the gate (gate.go)
	} {
		if err := step(ctx); err != nil {
			a.close()
			return nil, err
		}
	}
	return a, nil
}

// close closes what newApp opened, in reverse. Their errors change
// nothing at that point, so they are dropped.
func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		_ = a.closers[i]()
	}
}

// connect makes the Redis client: one node, Sentinel or Cluster, as the
// URL says.
func (a *app) connect(context.Context) error {
	opts, err := a.cfg.Redis()
	if err != nil {
		return err
	}
	a.redisOpts = opts
	a.rdb = redisconn.New(opts)
	a.closers = append(a.closers, a.rdb.Close)
	a.log.Info("redis", "topology", redisconn.KindOf(opts), "url", redisconn.Redact(a.cfg.RedisURL), "wait_replicas", a.cfg.RedisWaitReplicas)
	return nil
}

// addDefences loads the operator's network classes (a file that does not
// parse refuses to start, naming its line; later edits are reloaded, a
// bad one kept out) and the human check's provider.
func (a *app) addDefences(ctx context.Context) error {
	if f := a.cfg.NetworksFile; f != "" {
		w, err := netclass.Watch(ctx, f, 10*time.Second, a.log)
		if err != nil {
			return errFatal{fmt.Errorf("WAITROOM_NETWORKS_FILE: %w", err)}
		}
		at, sizes := w.Loaded()
		a.log.Info("network classes", "file", f, "loaded_at", at, "shared", sizes[netclass.Shared], "hosting", sizes[netclass.Hosting])
		a.networks = w
	}
	if a.cfg.HumanCheck.Provider != humancheck.Off {
		h, err := humancheck.New(a.cfg.HumanCheck, a.rdb, a.log)
		if err != nil {
			return errFatal{err}
		}
		a.log.Info("human check", "options", a.cfg.HumanCheck)
		a.human = h
	}
	return nil
}

// openStore builds the queue store with what it works with: this
// replica's view of the places moved to another device lately, which keeps
// the far-back status path from answering their older credentials
// (handoff.Tracker); the replica WAIT of enters; and the metrics, last,
// once the others are known to be valid.
func (a *app) openStore(context.Context) error {
	a.moves = handoff.NewTracker(a.rdb, a.cfg.Queues)
	opts := []queue.Option{queue.WithRecentMoves(a.moves), queue.WithReplicaWait(a.replicaWait())}
	if a.human != nil {
		opts = append(opts, queue.WithHumanCheck(a.human.Available))
	}
	if a.cfg.MetricsAddr != "" {
		opts = append(opts, queue.WithObserver(a.serveMetrics))
	}
	store, err := queue.NewStore(a.rdb, a.cfg.Queues, a.cfg.Defaults, a.cfg.RequestTimeout, opts...)
	a.store = store
	return err
}

// serveMetrics builds the metrics over store (they read it at scrape
// time) and serves them on a listener of their own, never the public one;
// it returns what the store reports to. Off, nothing is counted at all. A
// listener that cannot open is logged, not fatal: the waiting room serves
// on, and Prometheus sees the target down; then nothing is counted
// either, since nobody could read it.
func (a *app) serveMetrics(store *queue.Store) queue.Observer {
	mets := metrics.New(store)
	addr, stop, err := mets.Serve(a.cfg.MetricsAddr, a.log)
	if err != nil {
		a.log.Error("metrics listener: not serving metrics", "addr", a.cfg.MetricsAddr, "err", err)
		return nil
	}
	a.log.Info("serving metrics", "addr", addr.String())
	a.closers = append(a.closers, stop)
	a.rdb.AddHook(mets.RedisHook())
	a.obs = observers{tick: mets, http: mets.Middleware, hook: mets, failedOpen: mets.GateFailOpen, proxyCut: mets.ProxyCut, command: mets.Command, paid: mets}
	mets.SetPowMaxBits(a.cfg.Defaults.Price.MaxBits)
	if a.networks != nil {
		mets.SetNetworks(networkPrefixes(a.networks))
	}
	return mets
}

// replicaWait is the replica WAIT of enters the config asks for. An enter
// that fewer replicas than asked acknowledged in time is answered all the
// same; a warning says so at most once a minute, with the count of those
// left unsaid.
func (a *app) replicaWait() queue.ReplicaWait {
	shortLog := slog.New(loglimit.Handler(a.log.Handler(), 1, time.Minute))
	want := a.cfg.RedisWaitReplicas
	return queue.ReplicaWait{
		Replicas: want,
		Timeout:  a.cfg.RedisWaitTimeout,
		Short: func(q string, acked, calls int) {
			shortLog.Warn("redis: enters answered before enough replicas acknowledged them; a failover now could lose them",
				"queue", q, "acked", acked, "want", want, "enters", calls)
		},
	}
}

// waitForRedis seeds the settings and loads the shared secrets. The
// stored settings decide the tick period, and shared secrets may live in
// Redis, so it waits for Redis at start-up rather than guess; later
// outages are survived (503s).
func (a *app) waitForRedis(ctx context.Context) error {
	err := untilRedisAnswers(ctx, a.log, func() (err error) {
		if a.interval, err = seed(ctx, a.store, a.log); err != nil {
			return err
		}
		a.trust, err = loadTrust(ctx, a.cfg, a.rdb)
		return err
	})
	if err != nil {
		return err
	}
	if err := a.trust.addJoin(a.cfg); err != nil {
		return err
	}
	warnInsecure(a.cfg, a.log)
	return nil
}

// addHandoffs builds the moves of places to another device, and the
// worker that keeps this replica's view of the recent moves.
func (a *app) addHandoffs(context.Context) error {
	a.handoffs = handoff.New(a.rdb, a.store, a.moves, a.cfg.RequestTimeout)
	if a.cfg.PublicURL != "" { // else no QR codes: never a link on the request's Host
		if err := a.handoffs.SetPublicURL(a.cfg.PublicURL); err != nil {
			return err
		}
	}
	a.workers = append(a.workers, loop(func(ctx context.Context) { a.moves.Run(ctx, a.log) }))
	return nil
}

// addAdapter builds the controller of the automatic rate. The order
// page's health drives the rate where a queue turns it on
// (adapt_enabled): this replica's controller reads every queue's settings
// and origin report each second, probes while it holds a queue's probe
// lease, and proposes each tick's effective refill.
func (a *app) addAdapter(context.Context) error {
	auditLog, err := audit.New(a.rdb)
	if err != nil {
		return err
	}
	a.adapter, err = autorate.New(autorate.Options{Store: a.store, Redis: a.rdb, Audit: auditLog, Log: a.log, Timeout: a.cfg.RequestTimeout,
		ProbePolicy: a.cfg.ProbePolicy})
	if err != nil {
		return err
	}
	a.workers = append(a.workers, loop(a.adapter.Run))
	return nil
}

// addScheduler adds the worker that ticks every queue each interval.
func (a *app) addScheduler(context.Context) error {
	auditLog, err := audit.New(a.rdb)
	if err != nil {
		return err
	}
	obs := windowAudit{log: auditLog, next: a.obs.tick, slog: a.log}
	a.workers = append(a.workers, func(context.Context) (func(), error) {
		sched, err := scheduler.Start(a.store, scheduler.Period(a.interval), a.log, obs, a.adapter)
		if err != nil {
			return nil, err
		}
		return func() {
			if err := sched.Stop(); err != nil {
				a.log.Warn("scheduler stop", "err", err)
			}
		}, nil
	})
	return nil
}

// addWebhooks adds the site's events: with a webhook secret, this replica
// delivers every queue's outbox (and keeps each queue's webhooks flag).
func (a *app) addWebhooks(context.Context) error {
	if len(a.cfg.WebhookSecret) == 0 {
		return nil
	}
	hookOpts := webhook.Options{
		Queues:       a.cfg.Queues,
		Outbox:       a.store,
		URL:          a.cfg.WebhookURL,
		Secret:       a.cfg.WebhookSecret,
		InsecureHTTP: a.cfg.WebhookInsecureHTTP,
		Observer:     a.obs.hook,
		Log:          a.log,
	}
	// A client of their own: their reads block, and must never hold the
	// request path's connections.
	hookRedis := redisconn.NewBlocking(a.redisOpts, hookOpts.Conns())
	a.closers = append(a.closers, hookRedis.Close)
	hooks, err := webhook.New(hookRedis, hookOpts)
	if err != nil {
		return err
	}
	if a.cfg.WebhookInsecureHTTP {
		a.log.Warn("WAITROOM_WEBHOOK_INSECURE_HTTP=true: webhook URLs may be plain http, events and signatures then cross the network in clear; never use this in production")
	}
	a.workers = append(a.workers, func(ctx context.Context) (func(), error) { return hooks.Start(ctx), nil })
	return nil
}
