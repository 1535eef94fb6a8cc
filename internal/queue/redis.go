package queue

import (
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Pipelined returns the client the service runs its scripts on: concurrent
// requests' scripts share one pipelined write and read to Redis instead of
// a round trip each (go-redis AutoPipeline). On this project's benchmark it
// raised enter throughput by 40-90 % and cut Redis CPU per enter by 40-50 %
// (docs/PERFORMANCE.md). Each script still runs atomically on its own;
// only the transport is shared.
//
// Two things differ from a plain client, and both are bounded:
//   - a command's context is not watched once it is queued; the client's
//     read and write timeouts end it, so rdb must have them set
//     (config.RedisOptions does), and the store's callers stop waiting at
//     their own deadline (waitFor, batcher);
//   - at most maxQueued commands wait at once; beyond that a call fails at
//     once (and the API answers 503) instead of piling up behind a stalled
//     Redis.
//
// rdb should not retry commands (MaxRetries -1): a batch that failed after
// Redis ran part of it would run those scripts twice.
func Pipelined(rdb *redis.Client) (Redis, error) {
	ap, err := rdb.AutoPipelineWithOptions(&redis.AutoPipelineOptions{
		// No waiting for more commands: the batchers already gather each
		// script's callers (batch.go). A 100µs window cost 7-11 % more
		// server CPU per enter and status under load, and on an idle
		// server it became about 1 ms (the Go runtime then sleeps in
		// epoll, whose timeout is in ms): 1.46 ms per lone enter in
		// process against 0.20 ms without (docs/PERFORMANCE.md, change 8).
		MaxFlushDelay:     0,
		MaxQueuedCommands: maxQueued,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: auto-pipeline: %w", err)
	}
	return ap, nil
}

// maxQueued bounds the commands waiting for Redis: a few seconds of a
// heavy spike.
const maxQueued = 20000
