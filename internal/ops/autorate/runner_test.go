package autorate

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/safeurl"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

func ptr[T any](v T) *T { return &v }

// newRunner is a runner over a store with one fresh queue, whose probes
// go through client.
func newRunner(t *testing.T, rdb *redis.Client, q string, client *http.Client) (*Runner, *queue.Store) {
	t.Helper()
	store, err := queue.NewStore(rdb, []string{q}, queue.Settings{RefillSize: 20, RefillInterval: time.Hour, SessionTTL: time.Hour}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Options{Store: store, Redis: rdb, Audit: log, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Client: client, Timeout: 2 * time.Second, ProbePolicy: safeurl.Policy{AllowLoopback: true, AllowPrivate: true}})
	if err != nil {
		t.Fatal(err)
	}
	return r, store
}

func queueName(t *testing.T) string { return fmt.Sprintf("a%d", time.Now().UnixNano()) }

// tagged is a client whose requests say which replica sent them.
func tagged(name string) *http.Client {
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		r.Header.Set("X-Replica", name)
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestProbeLeaseOneReplica: three replicas refresh the same queue at once,
// many times; only the lease's holder probes, and its report is what
// every replica reads.
func TestProbeLeaseOneReplica(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("X-Replica")]++
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer site.Close()
	rdb := redistest.Client(t)
	q := queueName(t)
	var runners []*Runner
	for i := range 3 {
		r, store := newRunner(t, rdb, q, tagged(fmt.Sprint("r", i)))
		if i == 0 {
			err := queue.NewInspector(store).UpdateSettings(context.Background(), q, queue.Update{AdaptEnabled: ptr(true), OriginMaxErrorRate: ptr(0.5),
				OriginProbeURL: ptr(site.URL + "/healthz")})
			if err != nil {
				t.Fatal(err)
			}
		}
		runners = append(runners, r)
	}
	ctx := context.Background()
	for range 5 {
		var wg sync.WaitGroup
		for _, r := range runners {
			wg.Add(1)
			go func() { defer wg.Done(); r.refresh(ctx, q) }()
		}
		wg.Wait()
	}
	mu.Lock()
	seen = maps.Clone(seen)
	mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("probes by replica: %v, want one replica", seen)
	}
	for _, n := range seen {
		if n != 5 {
			t.Fatalf("the holder probed %d times in 5 refreshes, want 5", n)
		}
	}
	// The probes all failed (503): the holder's report says so, and every
	// replica proposes a decrease from it.
	for _, r := range runners {
		r.refresh(ctx, q)
		if p := r.Propose(q); p != (queue.Proposal{Refill: 10, Base: 20}) {
			t.Fatalf("proposal from the probe's report: %+v, want 20 → 10", p)
		}
	}
}

func TestLeaseTakenOverWhenItsHolderStops(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	s := store{rdb: rdb, timeout: 2 * time.Second}
	q := queueName(t)
	ctx := context.Background()
	if held, err := s.hold(ctx, q, "a", 50*time.Millisecond); err != nil || !held {
		t.Fatalf("first take: %v %v", held, err)
	}
	if held, _ := s.hold(ctx, q, "b", time.Second); held {
		t.Fatal("b took a lease a holds")
	}
	if held, _ := s.hold(ctx, q, "a", 50*time.Millisecond); !held {
		t.Fatal("a could not renew its lease")
	}
	// a stops renewing: b takes over once the lease expires.
	wait.For(t, 5*time.Second, "b to take the expired lease", func() (bool, string) {
		held, err := s.hold(ctx, q, "b", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return held, "a still holds it"
	})
	if held, _ := s.hold(ctx, q, "a", time.Second); held {
		t.Fatal("a took back a lease b holds")
	}
}

// TestStepAudited: the proxy's view over target makes the runner propose
// a decrease; the tick stores it, and the step is in the audit log as
// "automatic". A second replica proposing from the same reading changes
// nothing.
func TestStepAudited(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	q := queueName(t)
	a, store := newRunner(t, rdb, q, nil)
	b, _ := newRunner(t, rdb, q, nil)
	ctx := context.Background()
	if err := queue.NewInspector(store).UpdateSettings(ctx, q, queue.Update{AdaptEnabled: ptr(true), OriginTargetP95: ptr(100 * time.Millisecond),
		MinRefillSize: ptr(5)}); err != nil {
		t.Fatal(err)
	}
	a.refresh(ctx, q)
	b.refresh(ctx, q)
	if p := a.Propose(q); p != (queue.Proposal{}) {
		t.Fatalf("proposal with no answers seen: %+v, want none", p)
	}
	for i := range MinSamples {
		a.Observe(q, voice(i), 200, 300*time.Millisecond)
		b.Observe(q, voice(i), 200, 300*time.Millisecond)
	}
	pa, pb := a.Propose(q), b.Propose(q)
	if pa != (queue.Proposal{Refill: 10, Base: 20}) || pb != pa {
		t.Fatalf("proposals %+v and %+v, want 20 → 10", pa, pb)
	}
	res, err := store.TickWith(ctx, q, pa)
	if err != nil || !res.Adapted || res.Budget != 10 {
		t.Fatalf("tick: %+v, %v", res, err)
	}
	a.Ticked(q, pa, res)
	// b's tick of the next interval brings a proposal from a stale reading.
	if err := rdb.HDel(ctx, rediskeys.Tick(q), "next_at_ms").Err(); err != nil {
		t.Fatal(err)
	}
	res, err = store.TickWith(ctx, q, pb)
	if err != nil || res.Adapted || res.Budget != 10 {
		t.Fatalf("stale tick: %+v, %v", res, err)
	}
	b.Ticked(q, pb, res)
	log, _ := audit.New(rdb)
	var entries []audit.Entry
	wait.For(t, 5*time.Second, "the step's audit entry", func() (bool, string) {
		if entries, err = log.List(ctx, q, 10); err != nil {
			t.Fatal(err)
		}
		return len(entries) > 0, "no entry"
	})
	if len(entries) != 1 || entries[0].Actor == nil || *entries[0].Actor != self || entries[0].Action != Actor || len(entries[0].Changes) != 1 ||
		entries[0].Changes[0].Field != "refill_effective" || string(entries[0].Changes[0].Old) != "20" || string(entries[0].Changes[0].New) != "10" {
		t.Fatalf("audit: %+v", entries)
	}
	// No step within MinGapAfterDecrease of a decrease, whatever the
	// answers say.
	for i := range MinSamples {
		a.window.Observe(q, voice(i), 200, 50*time.Millisecond, time.Now())
	}
	if p := a.Propose(q); p != (queue.Proposal{}) {
		t.Fatalf("proposal right after a step: %+v, want none", p)
	}
	// Within it, past MinStepGap: over target but under Worse × the p95
	// that made the decrease (300 ms), none; at Worse × it, a decrease.
	a.mu.Lock()
	a.queues[q].stepAt = time.Now().Add(-MinStepGap)
	a.mu.Unlock()
	for i := range MinSamples {
		a.window.Observe(q, voice(i), 200, 500*time.Millisecond, time.Now())
	}
	if p := a.Propose(q); p != (queue.Proposal{}) {
		t.Fatalf("proposal at a p95 under Worse × the step's: %+v, want none", p)
	}
	for i := range MinSamples {
		a.window.Observe(q, voice(i), 200, 600*time.Millisecond, time.Now())
	}
	if p := a.Propose(q); p != (queue.Proposal{Refill: 5, Base: 10}) {
		t.Fatalf("proposal at Worse × the step's p95: %+v, want 10 → 5", p)
	}
	// As if the step were MinGapAfterDecrease ago: answers to requests sent before
	// it count no more; healthy answers to requests sent after it: back
	// up by 5 % of refill_size.
	a.mu.Lock()
	step := time.Now().Add(-MinGapAfterDecrease)
	a.queues[q].stepAt = step
	a.mu.Unlock()
	a.window = NewWindow()
	for i := range MinSamples {
		a.window.Observe(q, voice(i), 200, time.Hour, step.Add(-time.Millisecond))
	}
	if p := a.Propose(q); p != (queue.Proposal{}) {
		t.Fatalf("proposal from answers to requests sent before the step: %+v, want none", p)
	}
	for i := range MinSamples {
		a.window.Observe(q, voice(i), 200, 50*time.Millisecond, time.Now()) // sent after the step
	}
	if p := a.Propose(q); p != (queue.Proposal{Refill: 11, Base: 10}) {
		t.Fatalf("healthy proposal %+v, want 10 → 11", p)
	}
}

func TestWindowSignal(t *testing.T) {
	w := NewWindow()
	now := time.Now()
	for i := range 100 {
		status := 200
		if i%10 == 0 {
			status = 502
		}
		w.Observe("q", "", status, time.Duration(i+1)*time.Millisecond, now)
	}
	w.Observe("q", "", 0, time.Hour, now.Add(-time.Minute)) // before the window
	sig, ok := w.pooled("q", now.Add(-time.Second), MinSamples)
	if !ok || sig.P95 != 95*time.Millisecond || sig.ErrorRate != 0.1 || sig.Samples != 100 {
		t.Fatalf("signal %+v %v", sig, ok)
	}
	if _, ok := w.Signal("other", now.Add(-time.Second)); ok {
		t.Fatal("a queue with no answers has a signal")
	}
	// The ring keeps the last WindowSize answers.
	for range WindowSize {
		w.Observe("q", "", 404, time.Millisecond, now) // a 4xx is the client's: no error
	}
	if sig, _ := w.pooled("q", now.Add(-time.Second), MinSamples); sig.Samples != WindowSize || sig.ErrorRate != 0 {
		t.Fatalf("after wrapping: %+v", sig)
	}
}

// TestSlowerThanSpan: when the page answers slower than Span, none of the
// requests sent within it has an answer yet; the runner judges by the
// answers to requests sent since the step instead of holding, blind.
func TestSlowerThanSpan(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	q := queueName(t)
	r, store := newRunner(t, rdb, q, nil)
	ctx := context.Background()
	if err := queue.NewInspector(store).UpdateSettings(ctx, q, queue.Update{AdaptEnabled: ptr(true), OriginTargetP95: ptr(time.Second),
		MinRefillSize: ptr(2)}); err != nil {
		t.Fatal(err)
	}
	r.refresh(ctx, q)
	now := time.Now()
	r.mu.Lock()
	r.queues[q].stepAt = now.Add(-3 * Span)
	r.mu.Unlock()
	// Sent 2 Span ago (after the step), answered just now, over target.
	for i := range MinSamples {
		r.window.Observe(q, voice(i), 200, 2*Span, now.Add(-2*Span))
	}
	if p := r.Propose(q); p != (queue.Proposal{Refill: 10, Base: 20}) {
		t.Fatalf("proposal %+v, want 20 → 10", p)
	}
	// Answers to requests sent before the step still count for nothing.
	r.window = NewWindow()
	for i := range MinSamples {
		r.window.Observe(q, voice(i), 200, 4*Span, now.Add(-4*Span))
	}
	if p := r.Propose(q); p != (queue.Proposal{}) {
		t.Fatalf("proposal from answers to requests sent before the step: %+v, want none", p)
	}
}

// voice is a test admission's sub: the i-th of a few.
func voice(i int) string { return fmt.Sprint("sub-", i%5) }
