package queue

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReplicaWait makes every enter wait until replicas hold its writes, so a
// place the service acknowledged survives a failover to one of them.
// Redis replicates asynchronously: without it a primary that dies can take
// the last places it acknowledged with it (docs/RELIABILITY.md).
//
// Each enter batch sends its script and then WAIT Replicas Timeout on the
// same connection, in one pipeline, which covers that script's writes
// (WAIT is refused inside Lua, and only counts the writes of the
// connection it is sent on). The group commit makes that one WAIT per
// batch, not per user.
//
// When fewer replicas than Replicas acknowledge within Timeout, the enter
// is answered as usual: a replica that is down or slow must not take the
// room down with it. Such enters are counted (ReplicaWaitShortfalls) and
// reported to Short. One exception: if the primary now refuses writes
// (NOREPLICAS: min-replicas-to-write is set and its replicas are gone;
// READONLY: it was demoted), the enters fail with that error, a 503. That
// is a switchover caught in the act: the replica was promoted before it
// got the script's writes, and the old primary's data will be discarded,
// so the places are not to be acknowledged. An operator who fenced the
// primary has already chosen refusals over loss; without the fence
// nothing changes.
type ReplicaWait struct {
	Replicas int           // 0: off
	Timeout  time.Duration // at least 1ms: WAIT 0 would block for ever
	// Short, when set, hears each enter batch of calls enters that fewer
	// than Replicas replicas (acked) acknowledged in time. It runs on the
	// batch's goroutine: it must be quick and never block.
	Short func(queue string, acked, calls int)
}

// pipeliner runs commands on one connection (a *redis.Client: one node,
// or the primary Sentinel names).
type pipeliner interface {
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// slotPrimary is a cluster client: WAIT carries no key, so a cluster client
// would send it to any node; the pipeline goes to the primary of the
// queue's slot instead.
type slotPrimary interface {
	MasterForKey(ctx context.Context, key string) (*redis.Client, error)
	ReloadState(ctx context.Context)
}

// checkReplicaWait says why w cannot be the store's replica WAIT
// (WithReplicaWait), if it cannot.
func (s *Store) checkReplicaWait(w ReplicaWait) error {
	if w.Replicas < 0 {
		return errors.New("queue: replica WAIT: replicas must not be negative")
	}
	if w.Replicas > 0 {
		if w.Timeout < time.Millisecond {
			return errors.New("queue: replica WAIT: the timeout must be at least 1ms")
		}
		if w.Timeout >= s.timeout {
			return fmt.Errorf("queue: replica WAIT: the timeout must be below the store's %s", s.timeout)
		}
		_, cluster := s.rdb.(slotPrimary)
		_, single := s.rdb.(pipeliner)
		if !cluster && !single {
			return errWaitClient
		}
	}
	return nil
}

// ReplicaWaitShortfalls counts the enters answered although fewer replicas
// than ReplicaWait.Replicas had acknowledged them: places a failover at
// that moment could lose.
func (s *Store) ReplicaWaitShortfalls() uint64 { return s.replica.short.Load() }

// runEnter runs one enter batch of n calls: the script alone, or with the
// replica WAIT after it (runWaited), counting the places a short WAIT
// left on the primary alone.
func (s *Store) runEnter(ctx context.Context, queue string, q *queueRef, n int, keys []string, args []any) ([]Ticket, error) {
	res, acked := s.runWaited(ctx, q, enterScript, keys, args...)
	v, err := res.Int64Slice()
	tickets, err := s.batchTickets("enter", n, v, err, true)
	if err != nil {
		return nil, err
	}
	if w := s.replica.wait; acked < w.Replicas {
		s.replica.short.Add(uint64(n))
		if w.Short != nil {
			w.Short(queue, acked, n)
		}
	}
	return tickets, nil
}

// fenced asks node whether it still takes writes, with a write that
// changes nothing (DEL of a key no script uses): Redis checks
// min-replicas-to-write, and a replica refuses writes, before running it.
// It returns the refusal, or a network error (the outcome is as unknown).
func fenced(ctx context.Context, node pipeliner, unused string) error {
	var del *redis.IntCmd
	_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		del = p.Del(ctx, unused)
		return nil
	})
	return del.Err()
}

// runWaited runs script on q's keys (an enter batch, a leave, a done) and
// returns its reply and how many replicas acknowledged it. With the
// replica WAIT on, the script and its WAIT go in one pipeline to the
// queue's primary, and the call fails when the WAIT falls short on a
// primary that now refuses writes: a place, or a leave, acknowledged there
// and then undone by the failover would be lost, or leave a place nobody
// holds. A short WAIT is otherwise answered as usual. Ticks are not waited
// for: their admissions reach users only through enter and status
// replies, and a WAIT on the tick's connection could not hold those back.
func (s *Store) runWaited(ctx context.Context, q *queueRef, script *script, keys []string, args ...any) (*redis.Cmd, int) {
	w := s.replica.wait
	if w.Replicas == 0 {
		return script.Run(ctx, s.rdb, keys, args...), 0
	}
	node, err := s.primaryFor(ctx, q)
	if err != nil {
		return errCmd(ctx, err), 0
	}
	res, acked := evalThenWait(ctx, node, script, keys, args, w)
	if cluster, ok := s.rdb.(slotPrimary); ok && res.Err() != nil {
		// The cluster client follows MOVED replies and failed primaries
		// only for the calls it routes itself: this one it did not.
		cluster.ReloadState(ctx)
	}
	if res.Err() == nil && acked < w.Replicas {
		if err := fenced(ctx, node, q.keys.unused); err != nil {
			return errCmd(ctx, fmt.Errorf("fewer replicas than asked acknowledged it, and the primary now refuses writes: %w", err)), acked
		}
	}
	return res, acked
}

// primaryFor is the node to send a script and its WAIT to: the client
// itself, or with a cluster client the primary of q's slot.
func (s *Store) primaryFor(ctx context.Context, q *queueRef) (pipeliner, error) {
	if cluster, ok := s.rdb.(slotPrimary); ok {
		return cluster.MasterForKey(ctx, q.keys.waiting)
	}
	return s.rdb.(pipeliner), nil // checked by WithReplicaWait
}

func errCmd(ctx context.Context, err error) *redis.Cmd {
	c := redis.NewCmd(ctx)
	c.SetErr(err)
	return c
}

// evalThenWait runs script and WAIT in one pipeline on node and, if node
// does not have the script's function yet (a new primary after a
// failover), loads it and runs both again. It returns the script's reply
// and the replicas that acknowledged (0 when WAIT itself failed).
func evalThenWait(ctx context.Context, node pipeliner, script *script, keys []string, args []any, w ReplicaWait) (*redis.Cmd, int) {
	run := func() (*redis.Cmd, int) {
		var res, wait *redis.Cmd
		// Each command carries its own error; the pipeline's is the first of them.
		_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
			res = p.FCall(ctx, script.name, keys, args...)
			wait = p.Do(ctx, "WAIT", w.Replicas, w.Timeout.Milliseconds())
			return nil
		})
		acked, err := wait.Int64()
		if err != nil {
			acked = 0
		}
		return res, int(acked)
	}
	res, acked := run()
	if missingFunction(res.Err()) {
		var load *redis.StringCmd
		_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
			load = p.FunctionLoad(ctx, script.lib)
			return nil
		})
		if err := loaded(load.Err()); err != nil {
			return errCmd(ctx, err), 0
		}
		res, acked = run()
	}
	return res, acked
}

// replicaState is the store's replica WAIT setting and its count of short
// enters (an atomic, so metrics may read it from any goroutine).
type replicaState struct {
	wait  ReplicaWait
	short atomic.Uint64
}
