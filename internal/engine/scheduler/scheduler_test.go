package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// Three replicas, started at different moments, each run the scheduler
// against one Redis: every interval is ticked exactly once, no interval
// admits more than the refill size, and no two ticks are closer than an
// interval.
func TestThreeReplicasTickOncePerInterval(t *testing.T) {
	const (
		interval = 200 * time.Millisecond
		refill   = 5
		users    = 400
		want     = 8 // ended intervals to observe
	)
	rdb := redistest.Client(t)
	name := fmt.Sprintf("sched%d", time.Now().UnixNano())
	settings := queue.Settings{RefillSize: refill, RefillInterval: interval, SessionTTL: time.Hour}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	newReplica := func() *queue.Store {
		s, err := queue.NewStore(rdb, []string{name}, settings, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	store := newReplica()
	for i := 0; i < users; i++ {
		if _, err := store.Enter(ctx, name, queue.Entry{Caller: queue.Caller{User: fmt.Sprintf("u%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}

	for r := 0; r < 3; r++ {
		s, err := Start(newReplica(), Period(interval), log, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := s.Stop(); err != nil {
				t.Error(err)
			}
		})
		time.Sleep(interval/3 + 7*time.Millisecond) // stagger the replicas' timers
	}

	var points []queue.HistoryPoint
	wait.For(t, time.Minute, fmt.Sprintf("%d intervals to end", want), func() (bool, string) {
		var err error
		if points, err = queue.NewInspector(store).History(ctx, name); err != nil {
			t.Fatal(err)
		}
		return len(points) >= want, fmt.Sprintf("%d ended", len(points))
	})

	for i := 1; i < len(points); i++ {
		if gap := points[i].At.Sub(points[i-1].At); gap < interval {
			t.Fatalf("ticks %s apart, less than the %s interval: %+v", gap, interval, points)
		}
	}
	seen := map[int64]bool{}
	for _, p := range points {
		iv := p.At.UnixMilli() / interval.Milliseconds()
		if seen[iv] {
			t.Fatalf("interval %d ticked twice: %+v", iv, points)
		}
		seen[iv] = true
		if p.Admitted > refill {
			t.Fatalf("interval %d admitted %d > %d", iv, p.Admitted, refill)
		}
	}
	// The first point is the initial bucket; after it every interval moved
	// a full refill from the long line.
	for _, p := range points[1:] {
		if p.Admitted != refill {
			t.Fatalf("an interval admitted %d with a long line waiting, want %d: %+v", p.Admitted, refill, points)
		}
	}
}

func TestPeriod(t *testing.T) {
	for _, tc := range []struct{ interval, want time.Duration }{
		{5 * time.Second, 500 * time.Millisecond},
		{time.Minute, time.Second},
		{100 * time.Millisecond, 10 * time.Millisecond},
	} {
		if got := Period(tc.interval); got != tc.want {
			t.Errorf("Period(%s) = %s, want %s", tc.interval, got, tc.want)
		}
	}
}

// tickLog records what a scheduler tells its Observer.
type tickLog struct {
	mu      sync.Mutex
	applied []queue.TickResult
	skipped int
	errs    []error
	queues  map[string]bool
}

func (l *tickLog) Tick(q string, res queue.TickResult, took time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queues[q] = true
	switch {
	case err != nil:
		l.errs = append(l.errs, err)
	case res.Applied:
		l.applied = append(l.applied, res)
	default:
		l.skipped++
	}
	if took <= 0 {
		l.errs = append(l.errs, errors.New("a tick call took no time"))
	}
}

// The observer hears every call: each applied tick once (as many as the
// history holds), the other calls of each interval as skipped, and how
// late each applied tick was. How late is up to the machine (a tick
// whose call a loaded machine ran 114 ms late is late by a whole
// interval and more, and the next one is due an interval after it), so
// the test asserts what the scheduler controls: never early, and the
// next tick due a full interval on.
func TestObserverHearsEveryTick(t *testing.T) {
	const (
		interval = 100 * time.Millisecond
		refill   = 3
		want     = 4 // applied ticks to observe
	)
	rdb := redistest.Client(t)
	name := fmt.Sprintf("obs%d", time.Now().UnixNano())
	settings := queue.Settings{RefillSize: refill, RefillInterval: interval, SessionTTL: time.Hour}
	store, err := queue.NewStore(rdb, []string{name}, settings, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 100; i++ { // a line long enough that every tick moves a full refill
		if _, err := store.Enter(ctx, name, queue.Entry{Caller: queue.Caller{User: fmt.Sprintf("u%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	obs := &tickLog{queues: map[string]bool{}}
	s, err := Start(store, Period(interval), slog.New(slog.NewTextHandler(io.Discard, nil)), obs, nil)
	if err != nil {
		t.Fatal(err)
	}
	wait.For(t, time.Minute, fmt.Sprintf("%d applied ticks", want), func() (bool, string) {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return len(obs.applied) >= want, fmt.Sprintf("%d applied", len(obs.applied))
	})
	if err := s.Stop(); err != nil { // no call runs after this
		t.Fatal(err)
	}

	points, err := queue.NewInspector(store).History(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.errs) > 0 {
		t.Fatalf("errors: %v", obs.errs)
	}
	if len(obs.queues) != 1 || !obs.queues[name] {
		t.Fatalf("heard of queues %v, want only %s", obs.queues, name)
	}
	// Every applied tick closes one interval in the history (the first
	// closes the initial bucket's, on which users entered directly).
	if len(points) != len(obs.applied) {
		t.Fatalf("%d applied ticks heard, %d in the history", len(obs.applied), len(points))
	}
	if obs.skipped == 0 {
		t.Fatal("no skipped call heard: the scheduler calls the tick several times per interval")
	}
	var late time.Duration
	for i, res := range obs.applied {
		if res.Moved != refill {
			t.Errorf("applied tick %d moved %d, want %d", i, res.Moved, refill)
		}
		if res.Late < 0 {
			t.Errorf("applied tick %d late by %s: applied before it was due", i, res.Late)
		}
		if res.UntilNext != interval {
			t.Errorf("applied tick %d has the next due in %s, want the interval %s", i, res.UntilNext, interval)
		}
		if i > 0 {
			late += res.Late
		}
	}
	t.Logf("%d ticks applied, on average %s after they were due (period %s)",
		len(obs.applied), late/time.Duration(len(obs.applied)-1), Period(interval))
}

// A call that finds the next tick due before the job's next run calls
// again when it is due, so a tick is not applied up to a period late
// (which every later tick would inherit). With a period far longer than
// the interval, the ticks after the first are applied only by those
// calls: an interval apart, maxWakes per run.
func TestTickCalledWhenDue(t *testing.T) {
	const (
		interval = 150 * time.Millisecond
		refill   = 2
	)
	rdb := redistest.Client(t)
	name := fmt.Sprintf("due%d", time.Now().UnixNano())
	settings := queue.Settings{RefillSize: refill, RefillInterval: interval, SessionTTL: time.Hour}
	store, err := queue.NewStore(rdb, []string{name}, settings, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		if _, err := store.Enter(ctx, name, queue.Entry{Caller: queue.Caller{User: fmt.Sprintf("u%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	obs := &tickLog{queues: map[string]bool{}}
	s, err := Start(store, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)), obs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	}()
	wait.For(t, time.Minute, fmt.Sprintf("%d ticks applied by a job run once", 1+maxWakes), func() (bool, string) {
		obs.mu.Lock()
		n, errs := len(obs.applied), obs.errs
		obs.mu.Unlock()
		if len(errs) > 0 {
			t.Fatalf("errors: %v", errs)
		}
		if n > 1+maxWakes {
			t.Fatalf("%d ticks applied by a job run once, want %d", n, 1+maxWakes)
		}
		return n == 1+maxWakes, fmt.Sprintf("%d applied", n)
	})
	points, err := queue.NewInspector(store).History(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	last, err := store.Info(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	at := []time.Time{}
	for _, p := range points {
		at = append(at, p.At)
	}
	at = append(at, last.LastTickAt)
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < interval {
			t.Fatalf("ticks %s apart, less than the %s interval", gap, interval)
		}
	}
}

// Places far from the head keep no "last heard" record, and are answered
// from the snapshot. Still: a place whose page keeps polling as told is
// never dropped, also when the operator raises the refill tenfold at once
// (places far back then reach the head before they were ever heard near
// it), and a place whose page closed is dropped at the head without
// being admitted.
func TestPollingPlacesAreNeverDropped(t *testing.T) {
	// A page polls at least once a second (below); abandon_after leaves
	// it 5 s, so a loaded machine that stalls a poll for a few seconds
	// does not drop it (with 2 s, 12 of 200 pages polling as told were
	// dropped in a run beside a looping go build -a).
	const (
		interval = 200 * time.Millisecond
		refill   = 2
		users    = 300
		abandon  = 5 * time.Second
	)
	rdb := redistest.Client(t)
	name := fmt.Sprintf("poll%d", time.Now().UnixNano())
	settings := queue.Settings{RefillSize: refill, RefillInterval: interval, SessionTTL: time.Hour, AbandonAfter: abandon}
	ctx := context.Background()
	store, err := queue.NewStore(rdb, []string{name}, settings, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	seqs := make([]int64, users)
	for i := range users {
		tk, err := store.Enter(ctx, name, queue.Entry{Caller: queue.Caller{User: fmt.Sprintf("u%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		seqs[i] = tk.Seq
	}
	sched, err := Start(store, Period(interval), slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sched.Stop() })

	// Two in three poll as their page would; the others closed the page.
	var wg sync.WaitGroup
	var mu sync.Mutex
	ended := map[string]queue.Ticket{}
	// How long the pages poll before the test gives up on their turn: the
	// line is through in about 15 s on an idle machine.
	deadline := time.Now().Add(2 * time.Minute)
	for i := range users {
		if i%3 == 2 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := fmt.Sprintf("u%d", i)
			for time.Now().Before(deadline) {
				tk, err := store.Status(ctx, name, queue.Caller{User: user, Seq: seqs[i], Proved: true})
				if err != nil {
					t.Errorf("%s: %v", user, err)
					return
				}
				if tk.Status != queue.Waiting {
					mu.Lock()
					ended[user] = tk
					mu.Unlock()
					return
				}
				time.Sleep(min(tk.PollAfter(), time.Second))
			}
		}()
	}
	time.Sleep(time.Second)
	tenfold := refill * 10
	if err := queue.NewInspector(store).UpdateSettings(ctx, name, queue.Update{RefillSize: &tenfold}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range users {
		user := fmt.Sprintf("u%d", i)
		if i%3 != 2 {
			if tk, ok := ended[user]; !ok || tk.Status != queue.Entered {
				t.Errorf("%s kept polling and ended %+v (%v)", user, tk.Status, tk.Reason)
			}
		}
	}
	// The silent places that entered far from the head (no record): dropped
	// as abandoned, never admitted, once their confirmation time ran out.
	// (Status would hear them: the line is watched through Info and the
	// held places' ZSET, the outcome read from Redis.) Those that entered
	// near the head were heard then, and may be admitted within
	// abandon_after of it, as ever. Held aside at the head,
	// they leave the line at once and are dropped abandon_after later.
	wait.For(t, time.Minute, "the line and the held places to empty", func() (bool, string) {
		info, err := store.Info(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		held, err := rdb.ZCard(ctx, rediskeys.Held(name)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return info.Waiting == 0 && held == 0, fmt.Sprintf("%d waiting, %d held", info.Waiting, held)
	})
	near := refill * (int((2*abandon+interval-1)/interval) + 2) // near_head: ceil(2 * abandon_after / interval) + 2 ticks
	for i := 2; i < users; i += 3 {
		if i < 2*near {
			continue
		}
		user := fmt.Sprintf("u%d", i)
		if _, err := rdb.ZScore(ctx, rediskeys.Entered(name), user).Result(); err == nil {
			t.Errorf("silent %s, far back, was admitted", user)
		}
		_, err := rdb.ZScore(ctx, rediskeys.Gone(name), queue.ReasonAbandoned+":"+user).Result()
		if err != nil {
			t.Errorf("silent %s, far back, was not dropped as abandoned: %v", user, err)
		}
	}
}
