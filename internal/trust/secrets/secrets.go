// Package secrets keeps the values that every replica must share when the
// operator has not configured them (the place credential key, the entry
// pass signing key): the first replica to need one generates it and stores
// it in Redis (one HASH, a field each: rediskeys.Secrets), and every
// replica, then and later, uses that one. Anyone who
// can read Redis can read them, so production sets its own (README).
package secrets

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// Redis is the part of a go-redis client this package uses.
type Redis interface {
	HSetNX(ctx context.Context, key, field string, value any) *redis.BoolCmd
	HGet(ctx context.Context, key, field string) *redis.StringCmd
}

// Shared returns the value stored under field, storing generate's result
// first if there is none. Replicas racing at start-up all get the value of
// the one whose HSETNX landed.
func Shared(ctx context.Context, rdb Redis, field string, generate func() ([]byte, error)) ([]byte, error) {
	v, err := rdb.HGet(ctx, rediskeys.Secrets, field).Bytes()
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("secrets: read %s: %w", field, err)
	}
	fresh, err := generate()
	if err != nil {
		return nil, fmt.Errorf("secrets: generate %s: %w", field, err)
	}
	if err := rdb.HSetNX(ctx, rediskeys.Secrets, field, fresh).Err(); err != nil {
		return nil, fmt.Errorf("secrets: store %s: %w", field, err)
	}
	v, err = rdb.HGet(ctx, rediskeys.Secrets, field).Bytes()
	if err != nil {
		return nil, fmt.Errorf("secrets: read %s: %w", field, err)
	}
	return v, nil
}
