package metrics

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// redisMetrics time every Redis command and count the failures, by
// command name (bounded: the names waitroom's own code sends).
type redisMetrics struct {
	duration         *prometheus.HistogramVec
	errors, timeouts *prometheus.CounterVec
	children         children[string, *redisChild]
}

type redisChild struct {
	duration         prometheus.Observer
	errors, timeouts prometheus.Counter
}

// knownCommands are made at start, so that their series exist (at 0)
// before the first failure: the error alert and rate() need them.
var knownCommands = []string{"fcall", "function", "evalsha", "eval", "hget", "hset", "hsetnx", "lrange", "ping", "pipeline"}

func newRedisMetrics(reg prometheus.Registerer) *redisMetrics {
	r := &redisMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "redis", Name: "command_duration_seconds",
			Help: "Time of each Redis command (a pipeline: command=pipeline), failed ones included. " +
				"A queue script is one fcall, however many users it carries.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"command"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "redis", Name: "errors_total",
			Help: "Redis commands that failed, timeouts included (not: a missing key, a script or function Redis did not have loaded yet, a caller that gave up).",
		}, []string{"command"}),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "redis", Name: "timeouts_total",
			Help: "Redis commands that failed because no answer came in time (also in redis_errors_total).",
		}, []string{"command"}),
	}
	reg.MustRegister(r.duration, r.errors, r.timeouts)
	for _, name := range knownCommands {
		r.child(name)
	}
	return r
}

// child returns the series of one command, made on its first use.
func (r *redisMetrics) child(name string) *redisChild {
	return r.children.get(name, r.newChild)
}

func (r *redisMetrics) newChild(name string) *redisChild {
	return &redisChild{
		duration: r.duration.WithLabelValues(name),
		errors:   r.errors.WithLabelValues(name),
		timeouts: r.timeouts.WithLabelValues(name),
	}
}

// observe records one command (or pipeline) that took d and ended with err.
func (r *redisMetrics) observe(name string, d time.Duration, err error) {
	c := r.child(name)
	c.duration.Observe(d.Seconds())
	if !failed(err) {
		return
	}
	c.errors.Inc()
	if timedOut(err) {
		c.timeouts.Inc()
	}
}

// failed tells a Redis failure from the errors that are answers: redis.Nil
// (no such key or field), NOSCRIPT (go-redis sends the script with EVAL
// next), a function not found (the queue loads its library and calls
// again), BUSYGROUP (a webhook consumer group that exists already) and a
// caller's context canceled (the client went away).
func failed(err error) bool {
	return err != nil && !errors.Is(err, redis.Nil) && !redis.HasErrorPrefix(err, "NOSCRIPT") &&
		!strings.Contains(err.Error(), "Function not found") && !redis.HasErrorPrefix(err, "BUSYGROUP") &&
		!errors.Is(err, context.Canceled)
}

func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// newWaitShort is waitroom_redis_wait_short_total, read from the store at
// scrape time.
func newWaitShort(store Store) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "redis", Name: "wait_short_total",
		Help: "Enters answered although fewer replicas than WAITROOM_REDIS_WAIT_REPLICAS acknowledged them in time: places a failover then could lose.",
	}, func() float64 { return float64(store.ReplicaWaitShortfalls()) })
}

// RedisHook returns the go-redis hook that times and counts every command
// of the client it is added to (rdb.AddHook).
func (m *Metrics) RedisHook() redis.Hook { return redisHook{m.redis} }

type redisHook struct{ m *redisMetrics }

func (h redisHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		h.m.observe(cmd.Name(), time.Since(start), err)
		return err
	}
}

func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		h.m.observe("pipeline", time.Since(start), err)
		return err
	}
}
