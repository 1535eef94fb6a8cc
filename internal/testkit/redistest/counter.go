package redistest

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Counter is a go-redis hook that counts the commands a client sends (a
// pipeline's each): tests add it (rdb.AddHook) to show what a path costs
// Redis, in commands rather than in time.
type Counter struct{ n atomic.Int64 }

// N is how many commands were sent so far.
func (c *Counter) N() int64 { return c.n.Load() }

func (c *Counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
