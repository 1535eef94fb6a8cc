package main

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/waitroom/waitroom/internal/config"
	"github.com/waitroom/waitroom/internal/hygiene/connlimit"
	"github.com/waitroom/waitroom/internal/hygiene/loglimit"
	"github.com/waitroom/waitroom/internal/web/httpapi"
	"github.com/waitroom/waitroom/internal/web/pages"
	"github.com/waitroom/waitroom/internal/web/soldout"
	"github.com/waitroom/waitroom/web"
)

// errorLogBurst is how many of net/http's own log lines pass per second.
const errorLogBurst = 10

// addServer builds the public HTTP server over the gate and the API, opens
// its listener, and adds the profiling listener when one is configured.
func (a *app) addServer(ctx context.Context) error {
	cfg := a.cfg
	waitingPages, err := a.newPages()
	if err != nil {
		return err
	}
	g, upstream, err := a.newGate(ctx, soldout.New(a.store, waitingPages))
	if err != nil {
		return err
	}
	opts, err := a.apiOptions(waitingPages)
	if err != nil {
		return err
	}
	opts.Gate, opts.Upstream, opts.Commands = g, upstream, a.commands
	a.srv = &http.Server{
		Addr:              cfg.Addr,
		Handler:           httpapi.New(opts),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       cfg.IdleTimeout,
		// Go's default is 1 MiB, so 1,000 connections sending unfinished
		// headers held 643 MB (docs/RELIABILITY.md).
		MaxHeaderBytes: cfg.MaxHeaderBytes,
		// net/http logs some lines per request a client can repeat (a query
		// with ';'); at most 10 a second reach the log.
		ErrorLog: slog.NewLogLogger(loglimit.Handler(a.log.Handler(), errorLogBurst, time.Second), slog.LevelWarn),
	}
	ln, err := listen(cfg, a.srv, a.log)
	if err != nil {
		return err
	}
	a.ln = ln
	a.closers = append(a.closers, ln.Close) // if it is never served
	if cfg.DebugAddr != "" {
		a.workers = append(a.workers, debugServer(cfg.DebugAddr, a.log))
	}
	return nil
}

// newPages are the waiting pages, checked now: a template that does not
// parse or lacks the script stops start-up, naming its file and line.
// The API serves them, and the gate's sold-out page is one of them.
func (a *app) newPages() (*pages.Pages, error) {
	messages, err := pages.Messages()
	if err != nil {
		return nil, err
	}
	waitingPages, err := pages.New(pages.Options{Project: pages.ProjectFS(), Messages: messages, Dir: a.cfg.PagesDir, Queues: a.store.Queues()})
	if err != nil {
		return nil, err
	}
	if a.cfg.PagesDir != "" {
		a.log.Info("operator pages", "dir", a.cfg.PagesDir)
	}
	return waitingPages, nil
}

// apiOptions are the API's options but for the gate: the store, the
// trust, the pages and the rest.
func (a *app) apiOptions(waitingPages *pages.Pages) (httpapi.Options, error) {
	cfg := a.cfg
	static, err := fs.Sub(web.Static, "static")
	if err != nil {
		return httpapi.Options{}, err
	}
	rec, err := a.newPaid(a.obs.paid) // with its flushing worker
	if err != nil {
		return httpapi.Options{}, err
	}
	return httpapi.Options{
		Store:           a.store,
		Places:          a.trust.places,
		Passes:          a.trust.passes,
		Join:            a.trust.join,
		Codes:           a.trust.codes,
		CookieSecure:    cfg.CookieSecure,
		InsecureUserIDs: cfg.InsecureUserIDs,
		AdminToken:      cfg.AdminToken,
		APITokens:       a.admin.tokens,
		Sessions:        a.admin.sessions,
		SignIn:          a.admin.signIn,
		TargetURL:       cfg.TargetURL,
		Logger:          a.log,
		Static:          static,
		Pages:           waitingPages,
		ClientIP:        cfg.ClientIP,
		Challenges:      a.trust.challenges,
		Origins:         cfg.Origins,
		Redis:           a.rdb, // the admin API's lockout and audit log
		Metrics:         a.obs.http,
		// a plain http webhook_url anywhere (webhook.CheckURL)
		WebhookInsecureHTTP: cfg.WebhookInsecureHTTP,
		NoWebhookSecret:     len(cfg.WebhookSecret) == 0, // a webhook_url would deliver nothing
		ProbePolicy:         cfg.ProbePolicy,             // what origin_probe_url may reach
		FailOpens:           a.failOpens,
		Handoffs:            a.handoffs,
		Adapt:               a.adapter,
		Human:               a.human,
		Networks:            a.networks,
		Paid:                rec,
		Defences:            a.defencesView(rec, a.cfg.NetworksFile != "", a.networks, a.human),
	}, nil
}

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

// debugServer is the worker that serves the profiling endpoints on a
// listener of their own, never on the public one.
func debugServer(addr string, log *slog.Logger) worker {
	return func(context.Context) (func(), error) {
		srv := &http.Server{Addr: addr, Handler: debugMux(), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				log.Error("debug listener", "err", err)
			}
		}()
		return func() { srv.Close() }, nil
	}
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
