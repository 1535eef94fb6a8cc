// Package envconfig loads the service's configuration for a test from a
// map of environment variables instead of the process's environment, so
// that tests running in parallel each have their own, and dials one Redis
// with the service's own options (its timeouts, no retries).
package envconfig

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/config"
	"github.com/waitroom/waitroom/internal/infra/redisconn"
)

// Lookup is a lookup for config.Load over the variables in env (nil: none
// set, every default).
func Lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

// Load is config.Load over env; a configuration it refuses fails t.
func Load(t testing.TB, env map[string]string) config.Config {
	t.Helper()
	cfg, err := config.Load(Lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// SingleRedis is cfg's Redis options for a single node, as a
// *redis.Options: for tests that dial one Redis their own way with the
// service's timeouts. A URL naming a cluster or a sentinel fails t.
func SingleRedis(t testing.TB, cfg config.Config) *redis.Options {
	t.Helper()
	opts, err := cfg.Redis()
	if err != nil {
		t.Fatal(err)
	}
	if kind := redisconn.KindOf(opts); kind != redisconn.Single {
		t.Fatalf("WAITROOM_REDIS_URL: a %s URL, not a single node", kind)
	}
	return opts.Simple()
}
