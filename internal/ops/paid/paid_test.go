package paid

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func uniq(prefix string) string { return fmt.Sprintf("%s%d", prefix, time.Now().UnixNano()) }

// clock is a settable clock shared by a test's recorders.
type clock struct{ at atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.at.Store(time.Now().UnixNano())
	return c
}
func (c *clock) now() time.Time          { return time.Unix(0, c.at.Load()) }
func (c *clock) add(d time.Duration)     { c.at.Add(int64(d)) }
func opts(c *clock, q ...string) Options { return Options{Queues: q, Now: c.now} }

func mustNew(t *testing.T, rdb Redis, o Options) *Recorder {
	t.Helper()
	r, err := New(rdb, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Two replicas' counts add up in Redis, whichever one reads them.
func TestReplicasAddUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Client(t)
	q, clk := uniq("twins"), newClock()
	a, b := mustNew(t, rdb, opts(clk, q)), mustNew(t, rdb, opts(clk, q))
	for range 3 {
		a.Record(q, Placed(0))
		a.Record(q, Asked(13))
		b.Record(q, Placed(13))
	}
	b.Record(q, Human(HumanAsked))
	b.Record(q, Human(HumanFailed))
	a.Record(q, Human(HumanAsked))
	a.Record(q, Human(HumanPassed))
	a.Record(q, Human(HumanUnavailable))
	for _, r := range []*Recorder{a, b} {
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := Summary{Minutes: 5, Places: 6, Priced: 3, BitsPaid: Bits{P50: 0, P99: 13, Max: 13},
		Challenges: 3, BitsAsked: Bits{13, 13, 13}, Human: HumanChecks{Asked: 2, Passed: 1, Failed: 1, Unavailable: 1}}
	for name, r := range map[string]*Recorder{"a": a, "b": b, "a third replica": mustNew(t, rdb, opts(clk, q))} {
		got, err := r.Summary(ctx, q, 5)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s reads %+v, want %+v", name, got, want)
		}
	}
	// Counts not yet flushed are this replica's own: they show at once
	// there, and elsewhere after the flush.
	a.Record(q, Placed(17))
	if got, _ := a.Summary(ctx, q, 5); got.Places != 7 || got.BitsPaid.Max != 17 {
		t.Errorf("a's own unflushed place missing: %+v", got)
	}
	if got, _ := b.Summary(ctx, q, 5); got.Places != 6 {
		t.Errorf("b reads a's unflushed place: %+v", got)
	}
	// The minutes asked, and no more: older minutes fall out.
	clk.add(3 * time.Minute)
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Summary(ctx, q, 1); got.Places != 1 || got.BitsPaid != (Bits{17, 17, 17}) {
		t.Errorf("the last minute: %+v, want the one place of 17 bits", got)
	}
	if got, _ := b.Summary(ctx, q, 4); got.Places != 7 {
		t.Errorf("the last 4 minutes: %+v, want 7 places", got)
	}
	ttl, err := rdb.TTL(ctx, rediskeys.Paid(q, minute(clk.now()))).Result()
	if err != nil || ttl <= Keep-time.Minute || ttl > Keep {
		t.Errorf("minute's key expires in %v (%v), want about %v", ttl, err, Keep)
	}
}

// Percentiles by nearest rank over a known distribution.
func TestPercentiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Client(t)
	q, clk := uniq("pct"), newClock()
	r := mustNew(t, rdb, opts(clk, q))
	// 1000 places: 600 free, 300 at 13 bits, 90 at 15, 9 at 16, 1 at 17.
	for bits, n := range map[int]int{0: 600, 13: 300, 15: 90, 16: 9, 17: 1} {
		for range n {
			r.Record(q, Placed(bits))
		}
	}
	// 100 challenges: 49 at 10, 50 at 14, 1 at 40 (counted at MaxBits).
	for bits, n := range map[int]int{10: 49, 14: 50, 40: 1} {
		for range n {
			r.Record(q, Asked(bits))
		}
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := r.Summary(ctx, q, 5)
	if err != nil {
		t.Fatal(err)
	}
	if s.Places != 1000 || s.Priced != 400 || s.BitsPaid != (Bits{P50: 0, P99: 15, Max: 17}) {
		t.Errorf("paid: %+v", s)
	}
	if s.Challenges != 100 || s.BitsAsked != (Bits{P50: 14, P99: 14, Max: MaxBits}) {
		t.Errorf("asked: %+v", s)
	}
	for _, c := range []struct {
		h    histogram
		p    float64
		want int
	}{
		{histogram{}, 0.5, 0},
		{histogram{5: 1}, 0.5, 5},
		{histogram{1: 1, 2: 1}, 0.5, 1},
		{histogram{1: 1, 2: 1}, 0.51, 2},
		{histogram{0: 99, 9: 1}, 0.99, 0},
		{histogram{0: 98, 9: 2}, 0.99, 9},
	} {
		if got := c.h.rank(c.p); got != c.want {
			t.Errorf("rank(%v) of %v = %d, want %d", c.p, c.h, got, c.want)
		}
	}
}

// pipelines counts the pipelines a recorder sends and the commands in
// each.
type pipelines struct {
	*redis.Client
	mu    sync.Mutex
	sizes []int
}

func (p *pipelines) Pipeline() redis.Pipeliner {
	return &countedPipe{Pipeliner: p.Client.Pipeline(), p: p}
}

type countedPipe struct {
	redis.Pipeliner
	p *pipelines
}

func (c *countedPipe) Exec(ctx context.Context) ([]redis.Cmder, error) {
	c.p.mu.Lock()
	c.p.sizes = append(c.p.sizes, c.Pipeliner.Len())
	c.p.mu.Unlock()
	return c.Pipeliner.Exec(ctx)
}

// A flush sends one pipeline per queue that has counts, of at most one
// command per counter and an EXPIRE, however many events it carries; a
// queue with none costs nothing.
func TestFlushIsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := &pipelines{Client: redistest.Client(t)}
	busy, idle, clk := uniq("busy"), uniq("idle"), newClock()
	r := mustNew(t, rdb, opts(clk, busy, idle))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				r.Record(busy, Placed(i%40))
				r.Record(busy, Asked((i+g)%33))
				r.Record(busy, Human(HumanAsked+Kind(i%4)))
			}
		}()
	}
	wg.Wait()
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	limit := 2*(MaxBits+1) + len(humanResults) + 1
	if len(rdb.sizes) != 1 || rdb.sizes[0] > limit {
		t.Fatalf("one flush of one busy queue sent pipelines of %v commands, want one of at most %d", rdb.sizes, limit)
	}
	s, err := r.Summary(ctx, busy, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Places != 40000 || s.Challenges != 40000 || s.Human != (HumanChecks{10000, 10000, 10000, 10000}) {
		t.Errorf("exact counts lost: %+v", s)
	}
	rdb.sizes = nil
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(rdb.sizes) != 0 {
		t.Errorf("a flush with nothing to add sent %v", rdb.sizes)
	}
}

// A flush that fails keeps its counts for the next.
func TestFailedFlushKeepsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Client(t)
	q, clk := uniq("keep"), newClock()
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { down.Close() })
	r := mustNew(t, down, opts(clk, q))
	r.Record(q, Placed(13))
	if err := r.Flush(ctx); err == nil {
		t.Fatal("a flush to no Redis succeeded")
	}
	r.rdb = rdb
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := rdb.HGet(ctx, rediskeys.Paid(q, minute(clk.now())), placeField(13)).Int()
	if err != nil || n != 1 {
		t.Errorf("kept count: %d, %v", n, err)
	}
}

// A client hammering with any queue names and any bits grows nothing: an
// unknown queue is ignored, bits are clamped into the fixed arrays.
// Not parallel: it measures the heap and allocations.
func TestHammeringGrowsNothing(t *testing.T) {
	q, clk := uniq("ham"), newClock()
	r := mustNew(t, redistest.Client(t), opts(clk, q))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 200000 {
		r.Record(fmt.Sprint("q", i), Placed(i))
		r.Record(q, Event{Kind: Kind(i % 256), Bits: i - 100000})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if len(r.queues) != 1 {
		t.Fatalf("%d queues counted, want the one configured", len(r.queues))
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 1<<20 {
		t.Errorf("heap grew %d bytes", grew)
	}
	if _, err := r.Summary(context.Background(), "unknown", 5); !errors.Is(err, ErrUnknownQueue) {
		t.Errorf("summary of an unknown queue: %v", err)
	}
	var nilRec *Recorder
	nilRec.Record(q, Placed(1)) // no recorder: nothing, no panic
	if testing.AllocsPerRun(100, func() { r.Record(q, Placed(13)) }) != 0 {
		t.Error("Record allocates")
	}
}

// Observed events reach the observer with their bits clamped; unknown
// queues do not.
func TestObserver(t *testing.T) {
	t.Parallel()
	q, clk := uniq("obs"), newClock()
	var got []Event
	o := opts(clk, q)
	o.Observer = observerFunc(func(queue string, e Event) { got = append(got, e) })
	r := mustNew(t, redistest.Client(t), o)
	r.Record(q, Placed(99))
	r.Record("other", Placed(1))
	r.Record(q, Human(HumanFailed))
	if len(got) != 2 || got[0] != Placed(MaxBits) || got[1].Kind.Result() != "failed" {
		t.Errorf("observed %+v", got)
	}
}

type observerFunc func(string, Event)

func (f observerFunc) Paid(q string, e Event) { f(q, e) }
