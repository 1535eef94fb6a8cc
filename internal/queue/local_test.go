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
	fullAt := l.buckets["q "+OpStatus+":p:u"].fullAt
	l.refused("q", OpStatus, c, Limit{}, lim, [2]Limit{})
	if got, want := l.buckets["q "+OpStatus+":p:u"].fullAt, fullAt-100; got != want {
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
	if _, ok := l.buckets["q "+OpStatus+":c:203.0.113.9"]; !ok {
		t.Errorf("no client bucket under its key: %v", l.buckets)
	}
}
