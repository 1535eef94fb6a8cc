package gate

import (
	"sync/atomic"
	"time"
)

// Clock is the time a gate's pass cache reads in a test: real time,
// moved on by what the test steps over (a recheck period) instead of
// sleeping through it.
type Clock struct{ ahead atomic.Int64 }

// Now is the clock's time.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

// Step moves the clock on by d.
func (c *Clock) Step(d time.Duration) { c.ahead.Add(int64(d)) }

// WithPassClock makes the remote check's pass cache of a gate built from o
// read c.
func WithPassClock(o *Options, c *Clock) { o.passClock = c.Now }
