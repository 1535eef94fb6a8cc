package queue

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher gathers the calls for one queue and one script that arrive while
// a call of that script is in flight, and sends them together in the next
// call (group commit). Under load this spreads a script's fixed cost
// (clock, config, bucket, the EVALSHA itself) over many users; with a
// single caller it is one call per request, as before. Users keep the
// order in which they reached this replica, and each call of the script is
// atomic as ever.
//
// No goroutine lives longer than the work: the first caller to find no
// batch running starts one, which runs batches until none is pending.
type batcher struct {
	mu      sync.Mutex
	pending []*batchCall
	running bool
	// run calls the script once for calls and sets each call's ticket, or
	// returns the error all of them get.
	run func(ctx context.Context, calls []*batchCall) error
}

type batchCall struct {
	user string
	done chan struct{} // closed once t or err is set
	t    Ticket
	err  error
	gone bool // the caller stopped waiting; guarded by batcher.mu
}

const (
	// maxBatch bounds the users of one script call, so that one call stays
	// short (a few µs of Redis time per user).
	maxBatch = 256
	// batchTimeout bounds one script call; callers stop waiting sooner
	// when their own context ends.
	batchTimeout = 5 * time.Second
	// maxPending bounds the calls waiting for a batch while Redis is slow
	// or away; beyond it a call fails at once (503) instead of queueing.
	maxPending = 20000
)

// ErrOverloaded is returned when too many calls already wait for Redis.
var ErrOverloaded = errors.New("queue: too many calls waiting for redis")

// do queues user for the next batch and waits for its ticket.
func (b *batcher) do(ctx context.Context, user string) (Ticket, error) {
	c := &batchCall{user: user, done: make(chan struct{})}
	b.mu.Lock()
	if len(b.pending) >= maxPending {
		b.mu.Unlock()
		return Ticket{}, ErrOverloaded
	}
	b.pending = append(b.pending, c)
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go b.drain()
	}
	select {
	case <-c.done:
		return c.t, c.err
	case <-ctx.Done():
		// A call not yet sent is dropped from its batch; one already sent
		// may still take effect, and a status call tells.
		b.mu.Lock()
		c.gone = true
		b.mu.Unlock()
		return Ticket{}, ctx.Err()
	}
}

// drain runs batches until none is pending.
func (b *batcher) drain() {
	for {
		// Let the goroutines that are already runnable (requests read off
		// the network, about to call do) run first, so they join this batch
		// rather than the next. Without it a new drain goroutine runs at
		// once (it is scheduled next), and with few CPUs a batch held about
		// 5 users instead of 25 under load, each extra call costing Redis
		// and the server a round trip (docs/PERFORMANCE.md, change 5).
		runtime.Gosched()
		b.mu.Lock()
		calls := make([]*batchCall, 0, min(len(b.pending), maxBatch))
		taken := 0
		for _, c := range b.pending {
			if len(calls) == maxBatch {
				break
			}
			taken++
			if !c.gone {
				calls = append(calls, c)
			}
		}
		b.pending = b.pending[taken:]
		if len(calls) == 0 && len(b.pending) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		if len(calls) == 0 {
			continue
		}

		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		err := b.run(ctx, calls)
		cancel()
		for _, c := range calls {
			if err != nil {
				c.err = err
			}
			close(c.done)
		}
	}
}

// userArgs returns the script arguments: the replica's defaults, then the
// users of calls.
func (s *Store) userArgs(calls []*batchCall) []any {
	args := make([]any, 0, 3+len(calls))
	args = append(args, s.defaultArgs[0], s.defaultArgs[1], s.defaultArgs[2])
	for _, c := range calls {
		args = append(args, c.user)
	}
	return args
}

// runBatch runs script once for calls. Both batched scripts (enter.lua and
// status.lua) reply {waiting, until_next_tick_ms, interval_ms, refill_size}
// and then a status and position per user.
func (s *Store) runBatch(ctx context.Context, name string, script *redis.Script, keys []string, calls []*batchCall) error {
	v, err := script.Run(ctx, s.rdb, keys, s.userArgs(calls)...).Int64Slice()
	if err != nil {
		return fmt.Errorf("queue: %s: %w", name, err)
	}
	if len(v) != 4+2*len(calls) {
		return fmt.Errorf("queue: %s: reply of %d values for %d users", name, len(v), len(calls))
	}
	for i, c := range calls {
		if c.t, c.err = newTicket(v[4+2*i], v[5+2*i], v[0], v[1], v[2], v[3]); c.err != nil {
			return c.err
		}
	}
	return nil
}
