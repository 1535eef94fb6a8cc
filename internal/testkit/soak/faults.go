package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// The faults, each injected once in a phase of its own.
const (
	FaultNone         = "none"          // no fault: the baseline
	FaultKillReplica  = "kill-replica"  // SIGKILL one replica, then start it again
	FaultPauseRedis   = "pause-redis"   // SIGSTOP Redis for twice the request timeout, then SIGCONT
	FaultRestartRedis = "restart-redis" // SIGKILL Redis, then start it again from its AOF
	FaultFailover     = "failover"      // SIGKILL the primary: the Sentinels promote its replica; it comes back as a replica
	FaultSwitchover   = "switchover"    // SENTINEL FAILOVER: a planned promotion of the replica, the primary alive
)

// AllFaults are the faults a run injects by default ("all").
var AllFaults = []string{FaultKillReplica, FaultPauseRedis, FaultRestartRedis, FaultFailover, FaultSwitchover}

// sentinelFault reports whether fault needs the Sentinel set.
func sentinelFault(fault string) bool { return fault == FaultFailover || fault == FaultSwitchover }

// ParseFaults reads a comma-separated list ("all" for AllFaults).
func ParseFaults(s string) ([]string, error) {
	if s == "" || s == "all" {
		return AllFaults, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch f {
		case FaultNone, FaultKillReplica, FaultPauseRedis, FaultRestartRedis, FaultFailover, FaultSwitchover:
			out = append(out, f)
		default:
			return nil, fmt.Errorf("soak: unknown fault %q (want %s, %s or all)", f, FaultNone, strings.Join(AllFaults, ", "))
		}
	}
	return out, nil
}

// inject applies fault to e and returns when it has healed: the span in
// which calls could fail because of it.
func (e *env) inject(ctx context.Context, fault string, rng *rand.Rand) (Window, error) {
	w := Window{Start: time.Now()}
	var err error
	switch fault {
	case FaultNone:
	case FaultKillReplica:
		i := rng.IntN(len(e.replicas))
		e.replicas[i].kill()
		sleep(ctx, time.Second)
		if err = e.replicas[i].start(e.dir); err == nil {
			err = e.waitReady(ctx, i)
		}
	case FaultPauseRedis:
		// Longer than the request timeout: calls must end with 503 by
		// then, never hang.
		if err = e.redis[0].signal(syscall.SIGSTOP); err == nil {
			sleep(ctx, 2*e.cfg.RequestTimeout)
			err = e.redis[0].signal(syscall.SIGCONT)
		}
	case FaultRestartRedis:
		e.redis[0].kill()
		sleep(ctx, time.Second)
		e.redis[0] = e.redisProc(0)
		if err = e.redis[0].start(e.dir); err == nil {
			err = waitRedis(ctx, e.redisAddr(0))
		}
	case FaultFailover:
		err = e.failover(ctx, true)
	case FaultSwitchover:
		err = e.failover(ctx, false)
	default:
		err = fmt.Errorf("soak: unknown fault %q", fault)
	}
	w.End = time.Now()
	return w, err
}

// failover makes the Sentinels promote the replica: kill, by killing the
// primary (SIGKILL; it is started again from its AOF once the replica is
// promoted, and the Sentinels make it a replica); else by SENTINEL
// FAILOVER, the primary alive. It waits until the new primary has the old
// one as an online replica: until then no enter can be acknowledged with
// WAITROOM_REDIS_WAIT_REPLICAS=1.
func (e *env) failover(ctx context.Context, kill bool) error {
	before, err := e.primaryAddr(ctx)
	if err != nil {
		return err
	}
	old := 0
	if before == e.redisAddr(1) {
		old = 1
	}
	if kill {
		e.redis[old].kill()
	} else {
		sc := e.sentinelClient(0)
		err := poll(ctx, 20*time.Second, func() error { return sc.Failover(ctx, masterName).Err() })
		sc.Close()
		if err != nil {
			return fmt.Errorf("soak: SENTINEL FAILOVER: %w", err)
		}
	}
	err = poll(ctx, 60*time.Second, func() error {
		now, err := e.primaryAddr(ctx)
		if err != nil {
			return err
		}
		if now == before {
			return errors.New("the primary has not changed yet")
		}
		return nil
	})
	if err != nil {
		return err
	}
	if kill {
		e.redis[old] = e.redisProc(old)
		if err := e.redis[old].start(e.dir); err != nil {
			return err
		}
	}
	return poll(ctx, 60*time.Second, func() error {
		now, err := e.primaryAddr(ctx)
		if err != nil {
			return err
		}
		rdb := redis.NewClient(&redis.Options{Addr: now, MaxRetries: -1})
		defer rdb.Close()
		info, err := rdb.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "role:master") || !strings.Contains(info, "connected_slaves:1") ||
			!strings.Contains(info, "state=online") {
			return errors.New("the old primary is not an online replica yet")
		}
		return nil
	})
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
