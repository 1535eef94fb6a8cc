package redisconn

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// PingConns is the size of a Pinger's own connection pool.
const PingConns = 1

// Pinger asks Redis whether it answers on connections of its own, never
// the requests' pool: a flood of requests can use up that pool (go-redis
// then fails calls with "connection pool timeout" while Redis is idle),
// and the gate must not take that for Redis away. It holds
// PingConns connection, kept open (MinIdleConns), dialled again when
// lost; the gate pings one at a time.
type Pinger struct {
	c redis.UniversalClient
}

// NewPinger returns a Pinger for the Redis of o (any topology), with o's
// timeouts and a pool of PingConns.
func NewPinger(o *redis.UniversalOptions) *Pinger {
	p := *o
	p.PoolSize = PingConns
	p.MinIdleConns = PingConns
	p.MaxIdleConns = PingConns
	p.MaxActiveConns = PingConns
	return &Pinger{c: New(&p)}
}

// Ping sends a PING on the Pinger's own connection.
func (p *Pinger) Ping(ctx context.Context) error { return p.c.Ping(ctx).Err() }

// Close closes the Pinger's connection.
func (p *Pinger) Close() error { return p.c.Close() }
