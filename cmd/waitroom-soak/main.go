// Command waitroom-soak runs the soak check (package soak): a seeded mix
// of simulated users against replicas of waitroom on loopback, one fault
// per phase, then the invariants. It prints a table and exits 1 on any
// violation.
//
//	go run ./cmd/waitroom-soak -users 5000 -replicas 3 -duration 2m
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/soak"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "waitroom-soak:", err)
	}
	os.Exit(code)
}

// run parses the flags, runs the soak and returns the exit status: 0 all
// invariants held, 1 a violation (or a phase that could not run), 2 bad
// flags.
func run(ctx context.Context, args []string, out, logOut io.Writer) (int, error) {
	fs := flag.NewFlagSet("waitroom-soak", flag.ContinueOnError)
	fs.SetOutput(logOut)
	var o soak.Options
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the users' choices")
	fs.IntVar(&o.Users, "users", 1000, "simulated users per phase")
	fs.IntVar(&o.Replicas, "replicas", 3, "replicas of the service")
	fs.DurationVar(&o.Duration, "duration", 30*time.Second, "load per phase; the fault comes a third of the way in")
	faults := fs.String("faults", "all", "comma-separated: none, kill-replica, pause-redis, restart-redis, failover, switchover, or all")
	fs.StringVar(&o.Bin, "bin", "", "waitroom binary (default: go build it from this checkout)")
	fs.StringVar(&o.RedisServer, "redis-server", "", "redis-server binary (default: from PATH)")
	fs.StringVar(&o.Dir, "dir", "", "keep the processes' files and logs here (default: a temporary directory, removed after)")
	fs.IntVar(&o.RefillSize, "refill-size", 20, "WAITROOM_REFILL_SIZE")
	fs.DurationVar(&o.RefillInterval, "refill-interval", time.Second, "WAITROOM_REFILL_INTERVAL")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", 2*time.Second, "WAITROOM_REQUEST_TIMEOUT")
	fs.DurationVar(&o.Slack, "slack", time.Second, "what a call may take beyond the request timeout")
	opsFile := fs.String("ops", "", "write every call and the final Redis state here, as JSON lines, to look into a violation")
	if err := fs.Parse(args); err != nil {
		return 2, nil
	}
	var err error
	if o.Faults, err = soak.ParseFaults(*faults); err != nil {
		return 2, err
	}
	if o.Users < 1 || o.Replicas < 1 || o.Duration < 3*time.Second {
		return 2, fmt.Errorf("want -users and -replicas at least 1, -duration at least 3s")
	}
	o.Log = logOut
	phases, err := soak.Run(ctx, o)
	soak.WriteTable(out, phases)
	if *opsFile != "" {
		if werr := writeOps(*opsFile, phases); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if err != nil {
		return 1, err
	}
	for _, p := range phases {
		if p.Failed() {
			return 1, nil
		}
	}
	return 0, nil
}

// writeOps writes each phase's calls, one JSON object a line, then its
// Redis snapshot.
func writeOps(path string, phases []soak.PhaseResult) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, p := range phases {
		for _, op := range p.Record.Ops {
			if err := enc.Encode(struct {
				Phase string `json:"phase"`
				soak.Op
				Kind    string `json:"kind"`
				Outcome string `json:"outcome"`
			}{p.Fault, op, op.Kind.String(), op.Outcome.String()}); err != nil {
				f.Close()
				return err
			}
		}
		if err := enc.Encode(struct {
			Phase string        `json:"phase"`
			Snap  soak.Snapshot `json:"snapshot"`
		}{p.Fault, p.Record.Snap}); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
