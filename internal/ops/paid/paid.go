// Package paid keeps what visitors paid for their places: the proof of
// work each challenge asked and each place's proof carried, and the human
// checks asked and how they ended, per queue and minute, over every
// replica. The operator reads it in the back office and in the metrics,
// to see the price in force from the side of the people who pay it.
//
// Recording is on the enter path, so it costs a few atomic additions and
// no Redis call: each replica counts in memory (a fixed array per
// configured queue) and adds its counts to a per-queue, per-minute hash
// every FlushEvery, so the hashes hold every replica's sum.
package paid

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// MaxBits is the highest difficulty counted: a proof's leading zero bits
// never exceed it (queue.MaxChallengeDifficulty); higher values count
// here.
const MaxBits = 32

// FlushEvery is how often a replica adds its counts to Redis.
const FlushEvery = 10 * time.Second

// Keep is how long a minute's hash lives, and so the longest Summary.
const Keep = 15 * time.Minute

// MaxMinutes is the most minutes a Summary reads: a minute older than
// Keep is gone.
const MaxMinutes = int(Keep/time.Minute) - 1

// Kind is what happened to a visitor.
type Kind uint8

// The kinds of event.
const (
	// ChallengeAsked: a proof-of-work challenge was issued at Bits.
	ChallengeAsked Kind = iota
	// PlaceMade: a place was made, its proof carrying Bits (0: none).
	PlaceMade
	// HumanAsked: the visitor was asked for the human check.
	HumanAsked
	// HumanPassed: the provider said the visitor is a person.
	HumanPassed
	// HumanFailed: the provider said no.
	HumanFailed
	// HumanUnavailable: the provider could not judge; the proof of work
	// stood in.
	HumanUnavailable
)

// humanResults names the human check's kinds, in Kind order from
// HumanAsked: the metric's result label and the hash's fields.
var humanResults = [...]string{"asked", "passed", "failed", "unavailable"}

// HumanResults lists the human check's results in order, for a series per
// result from the start.
func HumanResults() []string { return humanResults[:] }

// Result is a human check kind's name ("asked", "passed", "failed",
// "unavailable"); "" for a proof-of-work kind.
func (k Kind) Result() string {
	if k >= HumanAsked && int(k-HumanAsked) < len(humanResults) {
		return humanResults[k-HumanAsked]
	}
	return ""
}

// Event is one thing a visitor paid or was asked.
type Event struct {
	Kind Kind
	// Bits is the difficulty of ChallengeAsked and PlaceMade, clamped to
	// 0…MaxBits; ignored for the human check.
	Bits int
}

// Asked is a challenge issued at bits.
func Asked(bits int) Event { return Event{Kind: ChallengeAsked, Bits: bits} }

// Placed is a place made with a proof of bits (0: none).
func Placed(bits int) Event { return Event{Kind: PlaceMade, Bits: bits} }

// Human is a human check's step: HumanAsked, HumanPassed, HumanFailed or
// HumanUnavailable.
func Human(k Kind) Event { return Event{Kind: k} }

// Observer is told of every event recorded for a configured queue, at
// once (the Prometheus metrics).
type Observer interface {
	Paid(queue string, e Event)
}

// Redis is the part of a go-redis client the recorder uses: one pipeline
// per queue for a flush and one for a summary (a queue's keys share its
// hash tag, so a Cluster pipeline goes to one node).
type Redis interface {
	Pipeline() redis.Pipeliner
}

// Options are a Recorder's settings.
type Options struct {
	// Queues are the configured queues; events of any other are ignored,
	// so memory is fixed whatever a client names.
	Queues []string
	// Observer is told of each event (nil: none).
	Observer Observer
	// Timeout bounds each flush and each summary (0: 2 s).
	Timeout time.Duration
	// Now is the clock that names the minutes (nil: time.Now).
	Now func() time.Time
}

// counts are one queue's events not yet added to Redis: a fixed array,
// each slot an atomic counter.
type counts struct {
	places [MaxBits + 1]atomic.Uint64
	asked  [MaxBits + 1]atomic.Uint64
	human  [len(humanResults)]atomic.Uint64
}

// Recorder counts one replica's events and adds them to Redis. Record is
// safe from any number of goroutines; the queue map is read-only after
// New.
type Recorder struct {
	rdb     Redis
	obs     Observer
	timeout time.Duration
	now     func() time.Time
	queues  map[string]*counts
}

// New returns a recorder for opts.Queues writing to rdb.
func New(rdb Redis, opts Options) (*Recorder, error) {
	if rdb == nil {
		return nil, errors.New("paid: a Redis client is required")
	}
	r := &Recorder{rdb: rdb, obs: opts.Observer, timeout: opts.Timeout, now: opts.Now, queues: map[string]*counts{}}
	if r.timeout <= 0 {
		r.timeout = 2 * time.Second
	}
	if r.now == nil {
		r.now = time.Now
	}
	for _, q := range opts.Queues {
		r.queues[q] = &counts{}
	}
	return r, nil
}

// clamp keeps bits within the counters.
func clamp(bits int) int {
	return min(max(bits, 0), MaxBits)
}

// Record counts e for queue: a few atomic additions, no Redis call. A nil
// Recorder records nothing, so a caller need not check.
func (r *Recorder) Record(queue string, e Event) {
	if r == nil {
		return
	}
	c := r.queues[queue]
	if c == nil {
		return
	}
	switch e.Kind {
	case ChallengeAsked:
		c.asked[clamp(e.Bits)].Add(1)
	case PlaceMade:
		c.places[clamp(e.Bits)].Add(1)
	default:
		if e.Kind.Result() == "" {
			return
		}
		c.human[e.Kind-HumanAsked].Add(1)
	}
	if r.obs != nil {
		e.Bits = clamp(e.Bits)
		r.obs.Paid(queue, e)
	}
}

// Hash fields of a minute's key (rediskeys.Paid).
func placeField(bits int) string { return "p:" + strconv.Itoa(bits) }
func askedField(bits int) string { return "a:" + strconv.Itoa(bits) }
func humanField(i int) string    { return "h:" + humanResults[i] }

// minute names the minute of t: Unix minutes. The replica's clock, not
// Redis's: a few seconds of skew move a count to the next minute at most,
// and the key's name must be known before the pipeline is sent.
func minute(t time.Time) string { return strconv.FormatInt(t.Unix()/60, 10) }

// taken is one queue's counts taken from memory for a flush.
type taken struct {
	places, asked [MaxBits + 1]uint64
	human         [len(humanResults)]uint64
	any           bool
}

func (c *counts) take() taken {
	var t taken
	swap := func(a *atomic.Uint64, into *uint64) {
		if a.Load() == 0 {
			return
		}
		*into = a.Swap(0)
		t.any = t.any || *into > 0
	}
	for i := range c.places {
		swap(&c.places[i], &t.places[i])
		swap(&c.asked[i], &t.asked[i])
	}
	for i := range c.human {
		swap(&c.human[i], &t.human[i])
	}
	return t
}

// putBack returns counts a flush could not write, for the next one.
func (c *counts) putBack(t taken) {
	for i := range t.places {
		c.places[i].Add(t.places[i])
		c.asked[i].Add(t.asked[i])
	}
	for i := range t.human {
		c.human[i].Add(t.human[i])
	}
}

// Flush adds the counts not yet in Redis to the current minute's hash of
// each queue: one pipeline per queue that has any (at most 2 × 33 + 4
// HINCRBY and an EXPIRE). Counts it cannot write stay for the next flush.
func (r *Recorder) Flush(ctx context.Context) error {
	if r == nil {
		return nil
	}
	var errs []error
	for q, c := range r.queues {
		t := c.take()
		if !t.any {
			continue
		}
		if err := r.write(ctx, q, t); err != nil {
			c.putBack(t)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *Recorder) write(ctx context.Context, q string, t taken) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	key := rediskeys.Paid(q, minute(r.now()))
	p := r.rdb.Pipeline()
	for i := range t.places {
		if t.places[i] > 0 {
			p.HIncrBy(ctx, key, placeField(i), int64(t.places[i]))
		}
		if t.asked[i] > 0 {
			p.HIncrBy(ctx, key, askedField(i), int64(t.asked[i]))
		}
	}
	for i, n := range t.human {
		if n > 0 {
			p.HIncrBy(ctx, key, humanField(i), int64(n))
		}
	}
	p.Expire(ctx, key, Keep)
	_, err := p.Exec(ctx)
	return err
}

// Run flushes every FlushEvery until ctx ends, then once more. A failed
// flush is logged only after one that succeeded, so an outage writes one
// line.
func (r *Recorder) Run(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(FlushEvery)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			_ = r.Flush(context.WithoutCancel(ctx))
			return
		case <-t.C:
		}
		err := r.Flush(ctx)
		if err != nil && !failing && log != nil {
			log.Warn("paid: cannot add what visitors paid to Redis yet; kept for later", "err", err)
		}
		failing = err != nil
	}
}
