// Command waitroom runs the virtual waiting room service.
package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/audit"
	"github.com/waitroom/waitroom/internal/autorate"
	"github.com/waitroom/waitroom/internal/challenge"
	"github.com/waitroom/waitroom/internal/config"
	"github.com/waitroom/waitroom/internal/connlimit"
	"github.com/waitroom/waitroom/internal/failopen"
	"github.com/waitroom/waitroom/internal/handoff"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/loglimit"
	"github.com/waitroom/waitroom/internal/metrics"
	"github.com/waitroom/waitroom/internal/pages"
	"github.com/waitroom/waitroom/internal/pass"
	"github.com/waitroom/waitroom/internal/passledger"
	"github.com/waitroom/waitroom/internal/place"
	"github.com/waitroom/waitroom/internal/proxy"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/internal/scheduler"
	"github.com/waitroom/waitroom/internal/secrets"
	"github.com/waitroom/waitroom/internal/webhook"
	"github.com/waitroom/waitroom/web"
)

// gcPercent is the GOGC the server runs with unless GOGC is set. Its live
// heap is about 1 MB, so at Go's default (100) it collected garbage about
// 55 times a second under load, for 7 % of its CPU; at 400 it collects a
// quarter as often for about 12 MB more memory (docs/PERFORMANCE.md,
// change 7).
const gcPercent = 400

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.LookupEnv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "waitroom:", err)
		os.Exit(1)
	}
}

// shutdownTimeout bounds how long in-flight requests may take to finish.
const shutdownTimeout = 10 * time.Second

// run wires config → Redis → store → scheduler → HTTP, serves until ctx
// ends, and shuts them down in reverse.
func run(ctx context.Context, lookup func(string) (string, bool), logOut io.Writer) error {
	cfg, err := config.Load(lookup)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: cfg.LogLevel}))
	redis.SetLogger(redisLogger{log})

	opts, err := cfg.Redis()
	if err != nil {
		return err
	}
	rdb := redisconn.New(opts) // one node, Sentinel or Cluster, as the URL says
	defer rdb.Close()
	log.Info("redis", "topology", redisconn.KindOf(opts), "url", redisconn.Redact(cfg.RedisURL), "wait_replicas", cfg.RedisWaitReplicas)

	store, err := queue.NewStore(rdb, cfg.Queues, cfg.Defaults, cfg.RequestTimeout)
	if err != nil {
		return err
	}
	// Metrics on a listener of their own, never the public one. Off, nothing
	// is counted at all. A listener that cannot open is logged, not fatal:
	// the waiting room serves on, and Prometheus sees the target down; then
	// nothing is counted either, since nobody could read it.
	var (
		tickObserver   scheduler.Observer
		httpMiddleware func(http.Handler) http.Handler
		hookObserver   webhook.Observer
		failedOpen     func(queue string) // waitroom_gate_fail_open_total
	)
	var proxyCut func(reason string) // waitroom_proxy_cut_total
	if cfg.MetricsAddr != "" {
		mets := metrics.New(store)
		if addr, stop, err := mets.Serve(cfg.MetricsAddr, log); err != nil {
			log.Error("metrics listener: not serving metrics", "addr", cfg.MetricsAddr, "err", err)
		} else {
			log.Info("serving metrics", "addr", addr.String())
			defer stop()
			rdb.AddHook(mets.RedisHook())
			store.SetObserver(mets)
			tickObserver, httpMiddleware, hookObserver, failedOpen = mets, mets.Middleware, mets, mets.GateFailOpen
			proxyCut = mets.ProxyCut
		}
	}
	// An enter that fewer replicas than asked acknowledged in time is
	// answered all the same; a warning says so at most once a minute, with
	// the count of those left unsaid.
	shortLog := slog.New(loglimit.Handler(log.Handler(), 1, time.Minute))
	err = store.SetReplicaWait(queue.ReplicaWait{
		Replicas: cfg.RedisWaitReplicas,
		Timeout:  cfg.RedisWaitTimeout,
		Short: func(q string, acked, calls int) {
			shortLog.Warn("redis: enters answered before enough replicas acknowledged them; a failover now could lose them",
				"queue", q, "acked", acked, "want", cfg.RedisWaitReplicas, "enters", calls)
		},
	})
	if err != nil {
		return err
	}
	// The stored settings decide the tick period, and shared secrets may
	// live in Redis, so wait for Redis at start-up rather than guess;
	// later outages are survived (503s).
	var (
		interval   time.Duration
		places     *place.Credentials
		passes     *pass.Passes
		challenges *challenge.Challenges
	)
	err = untilRedisAnswers(ctx, log, func() (err error) {
		if interval, err = seed(ctx, store, cfg.Defaults, log); err != nil {
			return err
		}
		places, passes, challenges, err = loadTrust(ctx, cfg, rdb)
		return err
	})
	if err != nil {
		return err
	}
	var join *place.Join
	if len(cfg.JoinSecret) > 0 {
		if join, err = place.NewJoin(cfg.JoinSecret); err != nil {
			return err
		}
	}
	if cfg.InsecureUserIDs {
		log.Warn("WAITROOM_INSECURE_USER_IDS=true: anyone who names a user id owns its place; never use this in production")
	}
	if !cfg.CookieSecure {
		log.Warn("WAITROOM_COOKIE_SECURE=false: place cookies travel over plain http; never use this in production")
	}

	// Places moved to another device: this replica's view of the recent
	// moves keeps the far-back status path from answering their older
	// credentials (handoff.Tracker).
	moves := handoff.NewTracker(rdb, cfg.Queues)
	store.SetRecentMoves(moves)
	handoffs := handoff.New(rdb, store, moves, cfg.RequestTimeout)
	if cfg.PublicURL != "" { // else no QR codes: never a link on the request's Host
		if err := handoffs.SetPublicURL(cfg.PublicURL); err != nil {
			return err
		}
	}
	movesDone := make(chan struct{})
	movesCtx, stopMoves := context.WithCancel(ctx)
	go func() { defer close(movesDone); moves.Run(movesCtx, log) }()
	defer func() { stopMoves(); <-movesDone }()

	// The order page's health drives the rate where a queue turns it on
	// (adapt_enabled): this replica's controller reads every queue's
	// settings and origin report each second, probes while it holds a
	// queue's probe lease, and proposes each tick's effective refill.
	auditLog, err := audit.New(rdb)
	if err != nil {
		return err
	}
	adapter, err := autorate.New(autorate.Options{Store: store, Redis: rdb, Audit: auditLog, Log: log, Timeout: cfg.RequestTimeout,
		ProbePolicy: cfg.ProbePolicy})
	if err != nil {
		return err
	}
	adaptDone := make(chan struct{})
	adaptCtx, stopAdapt := context.WithCancel(ctx)
	go func() { defer close(adaptDone); adapter.Run(adaptCtx) }()
	defer func() { stopAdapt(); <-adaptDone }()

	sched, err := scheduler.StartAdapting(store, scheduler.Period(interval), log, tickObserver, adapter)
	if err != nil {
		return err
	}
	defer func() {
		if err := sched.Stop(); err != nil {
			log.Warn("scheduler stop", "err", err)
		}
	}()

	// The site's events: with a webhook secret, this replica delivers
	// every queue's outbox (and keeps each queue's webhooks flag).
	if len(cfg.WebhookSecret) > 0 {
		hookOpts := webhook.Options{
			Queues:       cfg.Queues,
			URL:          cfg.WebhookURL,
			Secret:       cfg.WebhookSecret,
			InsecureHTTP: cfg.WebhookInsecureHTTP,
			Observer:     hookObserver,
			Log:          log,
		}
		// A client of their own: their reads block, and must never hold
		// the request path's connections (issue 26.10).
		hookRedis := redisconn.NewBlocking(opts, hookOpts.Conns())
		defer hookRedis.Close()
		hooks, err := webhook.New(hookRedis, hookOpts)
		if err != nil {
			return err
		}
		if cfg.WebhookInsecureHTTP {
			log.Warn("WAITROOM_WEBHOOK_INSECURE_HTTP=true: webhook URLs may be plain http, events and signatures then cross the network in clear; never use this in production")
		}
		stopHooks := hooks.Start(ctx)
		defer stopHooks()
	}

	uses, err := passledger.New(rdb, cfg.PassMaxClients, cfg.RequestTimeout)
	if err != nil {
		return err
	}
	// What the gate let through unchecked while Redis was away
	// (WAITROOM_GATE_FAIL=open), written to Redis once it is back.
	failOpens, err := failopen.New(rdb, cfg.RequestTimeout, failedOpen)
	if err != nil {
		return err
	}
	failOpensDone := make(chan struct{})
	failOpensCtx, stopFailOpens := context.WithCancel(ctx)
	go func() { defer close(failOpensDone); failOpens.Run(failOpensCtx, log) }()
	defer func() { stopFailOpens(); <-failOpensDone }()
	// The gate's ping has a connection of its own: a flood that takes
	// the requests' pool must not look like Redis away (issue 26.7).
	pinger := redisconn.NewPinger(opts)
	defer pinger.Close()
	g, err := proxy.NewGate(ctx, proxy.GateOptions{
		Queue:          cfg.GateQueue,
		Routes:         cfg.GateRoutes,
		Passes:         passes,
		Admissions:     store,
		Bypass:         cfg.GateBypass,
		BypassCIDRs:    cfg.GateBypassCIDRs,
		InsecureCookie: !cfg.CookieSecure,
		Uses:           uses,
		Revoke:         store.Remove,
		Fail:           gate.FailMode(cfg.GateFail),
		Ping:           pinger.Ping,
		OnFailOpen:     failOpens.Passed,
		Logger:         log,
	})
	if err != nil {
		return err
	}
	if len(cfg.GateRoutes) > 0 {
		routes := make([]string, 0, len(cfg.GateRoutes))
		for _, r := range g.Routes() {
			routes = append(routes, r.String()+"="+r.Queue)
		}
		// Without a catch-all, a path no route covers, or a host no route
		// names, passes without a pass: say so once.
		log.Info("gate routes", "routes", routes, "catch_all", cfg.GateQueue)
	}
	var upstream http.Handler
	if cfg.Upstream != nil {
		upstream, err = proxy.NewHandler(proxy.Options{Upstream: cfg.Upstream, Timeout: cfg.UpstreamTimeout, Log: log,
			Observe: adapter.Observe, Limits: cfg.GateLimits, OnCut: proxyCut})
		if err != nil {
			return err
		}
		log.Info("gate mode", "upstream", cfg.Upstream.Redacted(), "queue", cfg.GateQueue, "routes", len(cfg.GateRoutes), "bypass", cfg.GateBypass, "bypass_cidrs", len(cfg.GateBypassCIDRs), "fail", cfg.GateFail)
	}

	static, err := fs.Sub(web.Static, "static")
	if err != nil {
		return err
	}
	// The waiting page's templates, checked now: a template that does not
	// parse or lacks the script stops start-up, naming its file and line.
	messages, err := pages.Messages()
	if err != nil {
		return err
	}
	waitingPages, err := pages.New(pages.Options{Project: pages.ProjectFS(), Messages: messages, Dir: cfg.PagesDir, Queues: store.Queues()})
	if err != nil {
		return err
	}
	if cfg.PagesDir != "" {
		log.Info("operator pages", "dir", cfg.PagesDir)
	}
	srv := &http.Server{
		Addr: cfg.Addr,
		Handler: httpapi.New(httpapi.Options{
			Store:           store,
			Places:          places,
			Passes:          passes,
			Join:            join,
			CookieSecure:    cfg.CookieSecure,
			InsecureUserIDs: cfg.InsecureUserIDs,
			AdminToken:      cfg.AdminToken,
			TargetURL:       cfg.TargetURL,
			Logger:          log,
			Static:          static,
			Pages:           waitingPages,
			Gate:            g,
			Upstream:        upstream,
			ClientIP:        cfg.ClientIP,
			Challenges:      challenges,
			Origins:         cfg.Origins,
			Redis:           rdb, // the admin API's lockout and audit log
			Metrics:         httpMiddleware,
			// a plain http webhook_url anywhere (webhook.CheckURL)
			WebhookInsecureHTTP: cfg.WebhookInsecureHTTP,
			ProbePolicy:         cfg.ProbePolicy, // what origin_probe_url may reach
			FailOpens:           failOpens,
			Handoffs:            handoffs,
			Adapt:               adapter,
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       cfg.IdleTimeout,
		// Go's default is 1 MiB, so 1,000 connections sending unfinished
		// headers held 643 MB (docs/RELIABILITY.md).
		MaxHeaderBytes: cfg.MaxHeaderBytes,
		// net/http logs some lines per request a client can repeat (a query
		// with ';'); at most 10 a second reach the log.
		ErrorLog: slog.NewLogLogger(loglimit.Handler(log.Handler(), errorLogBurst, time.Second), slog.LevelWarn),
	}
	ln, err := listen(cfg, srv, log)
	if err != nil {
		return err
	}

	if cfg.DebugAddr != "" {
		// Profiling endpoints on their own listener, never on the public one.
		debugSrv := &http.Server{Addr: cfg.DebugAddr, Handler: debugMux(), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := debugSrv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				log.Error("debug listener", "err", err)
			}
		}()
		defer debugSrv.Close()
	}

	errc := make(chan error, 1)
	go func() {
		log.Info("listening", "addr", cfg.Addr, "queues", cfg.Queues, "admin_api", cfg.AdminToken != "")
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}

	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// errorLogBurst is how many of net/http's own log lines pass per second.
const errorLogBurst = 10

// listen opens the public listener, capped at cfg.MaxConns connections
// open at once (more wait in the kernel's accept queue). From 80 % of the
// cap, every idle keep-alive connection is closed and keep-alive is off
// until the open connections are back at half the cap: clients that idle
// on connections (15,000 from one client stayed open before) cannot keep
// new ones out, and those that poll reconnect, which costs them little.
func listen(cfg config.Config, srv *http.Server, log *slog.Logger) (*connlimit.Listener, error) {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	var limited *connlimit.Listener
	limited, err = connlimit.New(ln, cfg.MaxConns, func(high bool) {
		// SetKeepAlivesEnabled(false) closes the idle connections now.
		srv.SetKeepAlivesEnabled(!high)
		if high {
			log.Warn("connections near the cap: idle keep-alive connections closed, keep-alive off", "open", limited.Open(), "max", cfg.MaxConns)
		} else {
			log.Info("connections back under half the cap: keep-alive on", "open", limited.Open(), "max", cfg.MaxConns)
		}
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	return limited, nil
}

// untilRedisAnswers runs step until it succeeds, once a second, for as
// long as ctx lasts: at start-up Redis may not be up yet. A bad key file
// or secret fails at once instead (errFatal).
func untilRedisAnswers(ctx context.Context, log *slog.Logger, step func() error) error {
	for {
		err := step()
		if err == nil {
			return nil
		}
		var fatal errFatal
		if errors.As(err, &fatal) {
			return fatal.err
		}
		log.Warn("waiting for redis", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// errFatal marks an error that waiting for Redis cannot mend.
type errFatal struct{ err error }

func (e errFatal) Error() string { return e.err.Error() }

// seed stores the default settings where none are stored yet and returns
// the refill interval in force (the smallest over the queues, so every
// queue is checked often enough).
func seed(ctx context.Context, store *queue.Store, env queue.Settings, log *slog.Logger) (time.Duration, error) {
	if err := store.Seed(ctx); err != nil {
		return 0, err
	}
	var interval time.Duration
	for _, q := range store.Queues() {
		info, err := store.Info(ctx, q)
		if err != nil {
			return 0, err
		}
		if differ := seededDiff(env, info.Settings); len(differ) > 0 {
			// The environment only seeds a queue Redis does not know yet;
			// an operator who changed it and restarted would otherwise
			// wonder why nothing changed.
			log.Warn("the queue keeps the settings stored in Redis; these environment settings differ and are not applied "+
				"(change them with PATCH /admin/v1/queues/{queue} or the back office, or start from an empty Redis)",
				"queue", q, "differ", differ)
		}
		if interval == 0 || info.Settings.RefillInterval < interval {
			interval = info.Settings.RefillInterval
		}
	}
	return interval, nil
}

// seededDiff names the settings the environment seeds (queue.Store.Seed)
// whose stored value differs from the environment's, as "field=stored
// (env: value)".
func seededDiff(env, stored queue.Settings) []string {
	var d []string
	add := func(field string, s, e any) {
		if s != e {
			d = append(d, fmt.Sprintf("%s=%v (env: %v)", field, s, e))
		}
	}
	add("refill_size", stored.RefillSize, env.RefillSize)
	add("refill_interval", stored.RefillInterval, env.RefillInterval)
	add("session_ttl", stored.SessionTTL, env.SessionTTL)
	add("max_active", stored.MaxActive, env.MaxActive)
	add("abandon_after", stored.AbandonAfter, env.AbandonAfter)
	return d
}

// Fields of rediskeys.Secrets that hold what replicas share when the operator
// configured none.
const (
	placeSecretField = "place_secret"
	signingKeyField  = "pass_signing_key"
)

// loadTrust builds the place credentials, the proof-of-work challenges
// and the entry passes from the configured secret and key file, or from
// the ones the first replica generated and keeps in Redis.
func loadTrust(ctx context.Context, cfg config.Config, rdb secrets.Redis) (*place.Credentials, *pass.Passes, *challenge.Challenges, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	defer cancel()
	secret := cfg.Secret
	if len(secret) == 0 {
		var err error
		secret, err = secrets.Shared(ctx, rdb, placeSecretField, func() ([]byte, error) {
			b := make([]byte, place.MinSecretBytes)
			_, err := rand.Read(b)
			return b, err
		})
		if err != nil {
			return nil, nil, nil, err
		}
	}
	places, err := place.New(secret)
	if err != nil {
		return nil, nil, nil, errFatal{err}
	}
	// The challenges' key is derived from the same secret, so every
	// replica shares it and the operator keeps one secret.
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("waitroom proof-of-work challenge key v1"))
	challenges, err := challenge.New(mac.Sum(nil))
	if err != nil {
		return nil, nil, nil, errFatal{err}
	}

	var keyPEM []byte
	if cfg.SigningKeyFile != "" {
		if keyPEM, err = os.ReadFile(cfg.SigningKeyFile); err != nil {
			return nil, nil, nil, errFatal{fmt.Errorf("WAITROOM_SIGNING_KEY_FILE: %w", err)}
		}
	} else if keyPEM, err = secrets.Shared(ctx, rdb, signingKeyField, pass.GenerateKeyPEM); err != nil {
		return nil, nil, nil, err
	}
	keys, err := pass.ParseKeys(keyPEM)
	if err != nil {
		return nil, nil, nil, errFatal{fmt.Errorf("signing keys: %w", err)}
	}
	passes, err := pass.New(keys, cfg.Issuer)
	if err != nil {
		return nil, nil, nil, errFatal{err}
	}
	return places, passes, challenges, nil
}

// redisLogger sends go-redis's internal messages (failed dials and the
// like) to the service log instead of bare stderr.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}

// debugMux serves the pprof handlers.
func debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
