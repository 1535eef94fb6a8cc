package client

import (
	"context"
	"time"
)

// SetClock makes c's time now and sleep (the tests' clock).
func SetClock(c *Client, now func() time.Time, sleep func(context.Context, time.Duration) error) {
	c.clock = funcClock{now, sleep}
}

type funcClock struct {
	n func() time.Time
	s func(context.Context, time.Duration) error
}

func (f funcClock) now() time.Time                                   { return f.n() }
func (f funcClock) sleep(ctx context.Context, d time.Duration) error { return f.s(ctx, d) }

// Solve is the proof-of-work solver.
var Solve = solve
