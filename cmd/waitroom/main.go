// Command waitroom runs the virtual waiting room service.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/config"
	"github.com/waitroom/waitroom/internal/engine/queue"
)

// gcPercent is the GOGC the server runs with unless GOGC is set. Its live
// heap is about 1 MB, so at Go's default (100) it collected garbage about
// 55 times a second under load, for 7 % of its CPU; at 400 it collects a
// quarter as often for about 12 MB more memory (docs/PERFORMANCE.md,
// change 7).
const gcPercent = 400

func main() {
	// A subcommand is an operator's tool beside the service (so the image
	// carries them); without one it is the service, run as always.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "networks":
			os.Exit(networksCommand(os.Args[2:], os.Stdout, os.Stderr)) // networks.go
		case "solve":
			os.Exit(solveMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr)) // solve.go
		case "version":
			os.Exit(versionCommand(os.Args[2:], os.Stdout, os.Stderr)) // version.go
		case "verify-draw":
			os.Exit(verifyDrawMain(os.Args[2:], nil, os.Stdout, os.Stderr)) // verifydraw.go
		}
	}
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

// run loads the config and the log, wires the service (newApp, app.go:
// config → Redis → store → scheduler → HTTP), serves until ctx ends and
// shuts it down in reverse (app.run, lifecycle.go).
func run(ctx context.Context, lookup func(string) (string, bool), logOut io.Writer) error {
	cfg, err := config.Load(lookup)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: cfg.LogLevel}))
	redis.SetLogger(redisLogger{log})
	a, err := newApp(ctx, cfg, log)
	if err != nil {
		return err
	}
	return a.run(ctx)
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
// queue is checked often enough). It warns of every stored setting that
// differs from the environment's (queue.Inspector.EnvDiff, which compares
// with the defaults the store was built with).
func seed(ctx context.Context, store *queue.Store, log *slog.Logger) (time.Duration, error) {
	in := queue.NewInspector(store)
	if err := in.Seed(ctx); err != nil {
		return 0, err
	}
	var interval time.Duration
	for _, q := range store.Queues() {
		info, err := store.Info(ctx, q)
		if err != nil {
			return 0, err
		}
		differ, err := in.EnvDiff(ctx, q)
		if err != nil {
			return 0, err
		}
		if len(differ) > 0 {
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

// redisLogger sends go-redis's internal messages (failed dials and the
// like) to the service log instead of bare stderr.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
