// Package failopen keeps the record of what the gate let through
// unchecked while Redis was away (WAITROOM_GATE_FAIL=open): counted at
// once in this process (and its metric), written to Redis once Redis is
// back, so the back office shows it after the outage that caused it.
package failopen

import (
	"context"
	_ "embed"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

//go:embed record.lua
var recordLua string

var recordScript = redis.NewScript(recordLua)

// FlushEvery is how often the counts are written to Redis, while there
// are any and Redis answers.
const FlushEvery = 5 * time.Second

// Record is what a queue's gate let through unchecked, over every replica.
type Record struct {
	Requests int64
	LastAt   time.Time // zero: never
}

// Redis is the part of a go-redis client the record uses.
type Redis interface {
	redis.Scripter
	HMGet(ctx context.Context, key string, fields ...string) *redis.SliceCmd
}

// Recorder counts the requests let through unchecked and writes them to
// Redis.
type Recorder struct {
	rdb     Redis
	timeout time.Duration
	counted func(queue string) // the metric; nil: none

	mu      sync.Mutex
	pending map[string]*pending // queue -> not yet in Redis
}

type pending struct {
	n    int64
	last time.Time
}

// New returns a recorder writing to rdb, each write bounded by timeout;
// counted, when set, is told of each request at once (the metric).
func New(rdb Redis, timeout time.Duration, counted func(queue string)) (*Recorder, error) {
	if rdb == nil || timeout <= 0 {
		return nil, errors.New("failopen: a Redis client and a positive timeout are required")
	}
	return &Recorder{rdb: rdb, timeout: timeout, counted: counted, pending: map[string]*pending{}}, nil
}

// Passed counts one request queue's gate let through unchecked
// (gate.Options.OnFailOpen). It touches no Redis: Redis is away.
func (r *Recorder) Passed(queue string) {
	if r.counted != nil {
		r.counted(queue)
	}
	now := time.Now()
	r.mu.Lock()
	p := r.pending[queue]
	if p == nil {
		p = &pending{}
		r.pending[queue] = p
	}
	p.n++
	p.last = now
	r.mu.Unlock()
}

// Flush writes the counts not yet in Redis; those it cannot write stay
// for the next flush.
func (r *Recorder) Flush(ctx context.Context) error {
	r.mu.Lock()
	batch := r.pending
	r.pending = map[string]*pending{}
	r.mu.Unlock()
	var errs []error
	for q, p := range batch {
		if err := r.write(ctx, q, p); err != nil {
			errs = append(errs, err)
			r.mu.Lock()
			if now := r.pending[q]; now != nil {
				now.n += p.n
				if p.last.After(now.last) {
					now.last = p.last
				}
			} else {
				r.pending[q] = p
			}
			r.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

func (r *Recorder) write(ctx context.Context, q string, p *pending) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return recordScript.Run(ctx, r.rdb, []string{rediskeys.GateFailOpen(q)}, p.n, p.last.UnixMilli()).Err()
}

// Run flushes every FlushEvery until ctx ends, then once more (bounded by
// the timeout). A failed flush is logged only when it follows one that
// succeeded, so an outage writes one line, not one per flush.
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
		if err != nil && !failing {
			log.Warn("failopen: cannot write the gate's fail-open count to Redis yet; kept for later", "err", err)
		}
		failing = err != nil
	}
}

// Read returns queue's record.
func (r *Recorder) Read(ctx context.Context, name string) (Record, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	v, err := r.rdb.HMGet(ctx, rediskeys.GateFailOpen(name), "requests", "last_at_ms").Result()
	if err != nil {
		return Record{}, err
	}
	var rec Record
	if s, ok := v[0].(string); ok {
		rec.Requests, _ = strconv.ParseInt(s, 10, 64)
	}
	if s, ok := v[1].(string); ok {
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms > 0 {
			rec.LastAt = time.UnixMilli(ms)
		}
	}
	return rec, nil
}
