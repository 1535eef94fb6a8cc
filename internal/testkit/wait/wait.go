// Package wait is how tests wait for something to happen: they poll a
// condition until it holds, never sleep for a fixed time and hope.
//
// A timeout here is how long a test waits before it calls the condition
// false for good, not a claim about how fast the code is. Choose it for
// a loaded machine (the whole suite on two cores beside a compiler is
// ten times slower than an idle laptop): a condition that holds returns
// as soon as it does, so a generous timeout costs nothing when the test
// passes. A test that means to bound a duration should assert an order
// or a count the code controls (ticks, polls, calls), not wall-clock time.
package wait

import (
	"testing"
	"time"
)

// Polling starts fast, for conditions that hold almost at once, and
// slows down to maxStep, so that a long wait does not load the machine
// it waits on.
const (
	firstStep = 5 * time.Millisecond
	maxStep   = 100 * time.Millisecond
)

// For polls cond until it reports true, or fails tb after timeout. cond
// returns, besides whether it holds, what it saw ("3 polls", "status
// 503"): the failure says what was awaited (what) and the last thing
// cond saw, which is most of what one needs to tell a slow machine from
// a broken one. cond runs on the test's goroutine, so it may call
// tb.Fatal.
func For(tb testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	tb.Helper()
	began := time.Now()
	deadline := began.Add(timeout)
	step := firstStep
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s; last saw: %s", time.Since(began).Round(time.Millisecond), what, saw)
		}
		time.Sleep(step)
		step = min(2*step, maxStep)
	}
}
