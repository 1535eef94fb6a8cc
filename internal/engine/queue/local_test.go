package queue

import (
	"testing"
	"time"
)

// The local stage: a call now and then is quiet (no shared bucket), a
// faster one is hot and carries the quiet ones' charge, over the limit it
// refuses without Redis, and idle buckets are dropped.
func TestLocalStage(t *testing.T) {
	l := newLocalStage()
	lim := Limit{Rate: 10, Burst: 20} // 100 ms a call; quiet while at most 2 calls' worth is used
	now := time.Unix(1000, 0)
	for i := range 5 { // a page polling every 200 ms: always quiet
		if cost, wait := l.take([]byte("k"), lim, now.Add(time.Duration(i)*200*time.Millisecond)); cost != 0 || wait != 0 {
			t.Fatalf("poll %d: cost %d wait %s, want quiet", i, cost, wait)
		}
	}
	now = now.Add(10 * time.Second)
	var costs []int
	for range 20 { // a burst at one instant
		cost, wait := l.take([]byte("k"), lim, now)
		if wait != 0 {
			t.Fatalf("refused within the burst after %v", costs)
		}
		costs = append(costs, cost)
	}
	// Two quiet, then the first hot one carries them, then one each.
	if costs[0] != 0 || costs[1] != 0 || costs[2] != 3 || costs[3] != 1 || costs[19] != 1 {
		t.Fatalf("costs %v", costs)
	}
	if cost, wait := l.take([]byte("k"), lim, now); cost != 0 || wait != 100*time.Millisecond {
		t.Fatalf("over the burst: cost %d wait %s, want a refusal of 100ms", cost, wait)
	}
	// A hot call the shared bucket refused gives its quiet charge back.
	c := Caller{User: "u", Proved: true}
	now = now.Add(time.Hour)
	for range 3 {
		if err := l.admit("q", OpStatus, &c, Limit{}, lim, [2]Limit{}, now); err != nil {
			t.Fatal(err)
		}
	}
	if c.placeCost != 3 {
		t.Fatalf("third call's cost %d", c.placeCost)
	}
	before, _ := l.bucket("q " + OpStatus + ":p:u")
	fullAt := before.fullAt
	l.refused("q", OpStatus, c, Limit{}, lim, [2]Limit{})
	if after, _ := l.bucket("q " + OpStatus + ":p:u"); after.fullAt != fullAt-100 {
		got, want := after.fullAt, fullAt-100
		t.Fatalf("after a refusal the bucket is full at %v, want %v: the refused call still counts", got, want)
	}
	if err := l.admit("q", OpStatus, &c, Limit{}, lim, [2]Limit{}, now); err != nil || c.placeCost != 3 {
		t.Fatalf("after a refusal: cost %d, %v; want the 2 quiet ones again, and this one", c.placeCost, err)
	}
	// Idle buckets go at the next sweep.
	l.take([]byte("other"), lim, now.Add(time.Hour))
	if len(l.buckets) != 1 {
		t.Fatalf("%d buckets after a sweep, want the fresh one", len(l.buckets))
	}
}

// A call whose buckets exist allocates nothing in the stage.
func TestLocalStageAllocatesNothingForKnownBuckets(t *testing.T) {
	l := newLocalStage()
	lim := Limit{Rate: 200, Burst: 2000}
	c := Caller{Client: "203.0.113.9", User: "a:AAAAAAAAAAAAAAAAAAAAAA", Proved: true}
	now := time.Unix(1000, 0)
	if err := l.admit("q", OpStatus, &c, lim, lim, [2]Limit{}, now); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = l.admit("q", OpStatus, &c, lim, lim, [2]Limit{}, now) }); allocs != 0 {
		t.Errorf("%v allocations per call, want 0", allocs)
	}
	if _, ok := l.bucket("q " + OpStatus + ":c:203.0.113.9"); !ok {
		t.Errorf("no client bucket under its key: %v", l.buckets)
	}
}

// A crowd of new clients, each calling once, fills the stage with buckets
// full again within a second: the stage sweeps them when it is full, so
// the crowd's calls stay quiet (cost 0, no shared bucket) instead of all
// going to Redis once it holds maxLocalBuckets.
func TestLocalStageCrowdStaysQuiet(t *testing.T) {
	l := newLocalStage()
	lim := Limit{Rate: 1, Burst: 5} // the per-place default: full again a second after one call
	now := time.Unix(1000, 0)
	const perSecond = 100_000 // faster than maxLocalBuckets a sweepEvery
	hot := 0
	for i := range 3 * perSecond {
		at := now.Add(time.Duration(i) * time.Second / perSecond)
		cost, wait := l.take([]byte("q enter:p:"+userID(i)), lim, at)
		if wait != 0 {
			t.Fatalf("call %d refused", i)
		}
		if cost != 0 {
			hot++
		}
		if len(l.buckets) > maxLocalBuckets {
			t.Fatalf("%d buckets, above the bound %d", len(l.buckets), maxLocalBuckets)
		}
	}
	if hot != 0 {
		t.Errorf("%d of %d first calls went to the shared buckets, want none", hot, 3*perSecond)
	}
}

// When every bucket is live, the stage stays bounded and sweeps at most
// every fullSweepEvery; calls beyond it are hot (charged to Redis).
func TestLocalStageFullOfLiveBuckets(t *testing.T) {
	l := newLocalStage()
	lim := Limit{Rate: 0.01, Burst: 5} // 100 s a call: nothing is full again within the test
	now := time.Unix(1000, 0)
	hot := 0
	for i := range maxLocalBuckets + 1000 {
		at := now.Add(time.Duration(i) * time.Microsecond)
		if cost, _ := l.take([]byte("k"+userID(i)), lim, at); cost != 0 {
			hot++
		}
	}
	if len(l.buckets) != maxLocalBuckets || hot != 1000 {
		t.Fatalf("%d buckets and %d hot calls, want %d and 1000", len(l.buckets), hot, maxLocalBuckets)
	}
	if !l.swept.After(now) || l.swept.Sub(now) > 2*fullSweepEvery {
		t.Fatalf("last sweep at %v, want within the run", l.swept)
	}
}
