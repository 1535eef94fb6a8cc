// Command wr-crowd models an opening under pressure, in process, against
// a real Redis through queue.Store (the code the API calls, without
// HTTP): who pays the price of a place, a crowd or the bots?
//
// 20,000 people arrive: 40 % behind carriers' NAT (200 per /24, in a
// range the networks file classes shared), 30 % signed in (five per
// ordinary /24, no price), the rest one per network; and three bot farms
// want 2,000 places each: from 20 data-centre /24s (hosting), from 200
// residential /24s (default), and from one carrier /24 (its 256
// addresses). Arrivals are shuffled (seeded) and made as fast as the
// store takes them, which is far above the calm arrival rate, so the
// arrival pressure adds its bits. Each caller is built exactly as the
// service builds it (netclass's Table.Tiers, the ceiling for hosting, no
// price for a member), asks Challenge, "pays" with a proof of exactly
// the difficulty asked (the store checks a proof's difficulty and single
// use; package challenge checks solutions), or passes the human check
// when asked (counted: the stand-in passes a person, and a farm must buy
// one), and enters. Then every person's position is read back to check
// the line kept people in the order they entered.
//
// It runs three ways: (1) no networks file; (2) the carriers' range
// classed shared and the data centre's hosting; (3) that and the
// queue's human_check: escalate. It prints a Markdown table per way and
// the curve "places held by a network → bits asked", and exits 2 when a
// target is missed (targets in report.go). The rate limits are off: the
// model measures the price, and compressing an opening's minutes into
// seconds would make any rate limit refuse what it would let through.
//
//	wr-crowd -redis-addr 127.0.0.1:6401 -o crowd.md
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout)
	switch {
	case errors.Is(err, errTargetMissed):
		fmt.Fprintln(os.Stderr, "wr-crowd:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "wr-crowd:", err)
		os.Exit(1)
	}
}

// errTargetMissed: the model ran, a target was missed.
var errTargetMissed = errors.New("a target was missed")

type config struct {
	modelConfig
	redisAddr string
	rate      float64 // hashes a second of the page's solver
	botRate   float64 // and of a farm's native solver, one core
	out       string
}

func parseFlags(args []string) (config, error) {
	c := config{modelConfig: modelConfig{maxAttempts: 8, shape: fullShape}}
	fs := flag.NewFlagSet("wr-crowd", flag.ContinueOnError)
	fs.StringVar(&c.redisAddr, "redis-addr", "127.0.0.1:6379", "a Redis of the model's own (queues wr-crowd-* are written)")
	fs.Float64Var(&c.scale, "scale", 1, "the opening's scale: people and each farm's places (densities per network stay)")
	fs.Uint64Var(&c.seed, "seed", 1, "the arrival order's seed")
	fs.IntVar(&c.workers, "workers", 8, "callers at once (enough for the store's batching, as an API replica's handlers)")
	fs.IntVar(&c.bits, "bits", 13, "the price's base bits (WAITROOM_POW_NETWORK_BITS)")
	fs.Float64Var(&c.calm, "calm", 100, "calm arrivals a second at scale 1 (WAITROOM_POW_CALM_ARRIVALS; scaled with -scale)")
	fs.Float64Var(&c.rate, "rate", 65_000, "hashes a second of the waiting page's solver in Chromium, for the times")
	// BenchmarkHashRate's "tuned" Go solver on one core (docs/attacks/bots.md).
	fs.Float64Var(&c.botRate, "bot-rate", 1_330_000, "hashes a second of a farm's native solver on one core, for the farms' times")
	fs.IntVar(&c.shape.perCarrierAddr, "carrier-sharing", 1, "people behind each carrier address (1: an address each)")
	fs.BoolVar(&c.shape.farmAmongPeople, "farm-among-people", false, "put the carrier farm on the addresses of the first carrier /24's people")
	fs.StringVar(&c.out, "o", "", "also write the report to this file")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case c.scale <= 0 || c.scale > 10, c.workers < 1, c.rate <= 0, c.botRate <= 0, c.shape.perCarrierAddr < 1 || c.shape.perCarrierAddr > c.shape.perCarrier24, c.calm < 0:
		return c, errors.New("scale must be in (0, 10], workers, rate and bot-rate positive, carrier-sharing 1…200, calm not negative")
	case c.bits < 1 || c.bits > 32:
		return c, errors.New("bits must be 1…32")
	}
	c.queuePrefix = fmt.Sprintf("wr-crowd-%d", time.Now().UnixNano())
	return c, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: cfg.redisAddr, PoolSize: 4 * cfg.workers})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis %s: %w", cfg.redisAddr, err)
	}
	results, err := runWays(ctx, rdb, cfg.modelConfig)
	if err != nil {
		return err
	}
	var b strings.Builder
	report(&b, cfg, results)
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return err
	}
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	var miss []string
	for i, r := range results {
		miss = append(miss, targets(r, i)...)
	}
	if len(miss) > 0 {
		return fmt.Errorf("%w:\n  %s", errTargetMissed, strings.Join(miss, "\n  "))
	}
	return nil
}

// runWays runs the three ways, one queue each.
func runWays(ctx context.Context, rdb *redis.Client, cfg modelConfig) ([]*wayResult, error) {
	ws, err := ways()
	if err != nil {
		return nil, err
	}
	var results []*wayResult
	for i, w := range ws {
		r, err := runWay(ctx, rdb, cfg, w, i+1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		results = append(results, r)
	}
	return results, nil
}

// report writes the header, a section per way, and the curve of way 1.
func report(w io.Writer, cfg config, results []*wayResult) {
	fmt.Fprintf(w, "## The crowd model: scale %g, seed %d, %d workers, price bits %d, ceiling 2^%d\n\n",
		cfg.scale, cfg.seed, cfg.workers, cfg.bits, queue.DefaultMaxBits)
	if sh := cfg.shape; sh.perCarrierAddr > 1 || sh.farmAmongPeople {
		fmt.Fprintf(w, "Variant: %d carrier people an address; the carrier farm among the people: %v.\n\n", sh.perCarrierAddr, sh.farmAmongPeople)
	}
	fmt.Fprintf(w, "Networks file of ways 2 and 3:\n\n```\n%s```\n\n", networksFile)
	for _, r := range results {
		writeWay(w, r, cfg.modelConfig, cfg.rate, cfg.botRate)
	}
	if len(results) > 0 {
		writeCurve(w, results[0], cfg.bits)
	}
}
