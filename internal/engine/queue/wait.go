package queue

import (
	"context"
	"errors"
	"time"
)

// WaitFor runs call with ctx bounded by timeout and returns its result, or
// an error when that ends first: ErrTimeout, or ctx's own error. A client
// without ContextTimeoutEnabled ends a stalled command only by its read
// and write timeouts; waiting here makes every store call end in time
// whatever the client's options. Enter and Status wait in their batcher
// instead.
func WaitFor[T any](ctx context.Context, timeout time.Duration, call func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := call(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return zero, ErrTimeout
		}
		return zero, ctx.Err()
	}
}
