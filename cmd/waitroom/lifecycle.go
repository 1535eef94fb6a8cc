package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// shutdownTimeout bounds how long in-flight requests may take to finish.
const shutdownTimeout = 10 * time.Second

// A worker is one of the service's background jobs: it starts it, for as
// long as ctx lasts, and returns what stops it and waits for its end.
type worker func(ctx context.Context) (stop func(), err error)

// loop is the worker that runs fn on a goroutine of its own until stopped.
func loop(fn func(ctx context.Context)) worker {
	return func(ctx context.Context) (func(), error) {
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); fn(ctx) }()
		return func() { cancel(); <-done }, nil
	}
}

// run starts the app's workers in order, serves until ctx ends or the
// server fails, then shuts down in reverse: the server, the workers, and
// what newApp opened.
func (a *app) run(ctx context.Context) error {
	defer a.close()
	stop, err := a.start(ctx)
	defer stop()
	if err != nil {
		return err
	}
	return a.serve(ctx)
}

// start starts the workers in order, up to the first that fails; stop
// stops the ones started, in reverse.
func (a *app) start(ctx context.Context) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	for _, w := range a.workers {
		s, err := w(ctx)
		if err != nil {
			return stop, err
		}
		stops = append(stops, s)
	}
	return stop, nil
}

// serve serves until ctx ends, then lets in-flight requests finish within
// shutdownTimeout, or until the server fails.
func (a *app) serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() {
		a.log.Info("listening", "addr", a.cfg.Addr, "queues", a.cfg.Queues, "admin_api", a.cfg.Admin.Enabled(), "oidc", a.cfg.Admin.OIDC != nil)
		errc <- a.srv.Serve(a.ln)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}

	a.log.Info("shutting down")
	// ctx has ended: the shutdown gets a deadline of its own.
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := a.srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
