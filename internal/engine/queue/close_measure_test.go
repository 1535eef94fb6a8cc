package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMeasureClose measures a sale closed while a crowd polls
// (docs/perf-log/close.md). Skipped unless WAITROOM_CLOSE_N is set:
//
//	WAITROOM_CLOSE_N=100000 REDIS_ADDR=127.0.0.1:6396 go test -run TestMeasureClose -v ./internal/engine/queue/
//
// A line of N (filled as enter.lua would) is ticked as the scheduler does
// (each interval, and again at once while a call says more is to do; the
// snapshot read after each), S page models spread over it poll as the
// waiting page does: they read the line's document (the replica's
// snapshot) and ask their status only where it cannot place them, each
// after the poll interval its last answer gave, their first look at a
// random point of it. Newcomers arrive at WAITROOM_CLOSE_ARRIVALS a second:
// before the closing each enters; once the snapshot says closed, the gate
// answers them the sold-out page without Redis (before that, their enter
// is refused). Admitted models visit the order page through the gate every
// 10 s. After a window of WAITROOM_CLOSE_WINDOW (default 60 s) the sale is
// closed, and the same window (at least MaxPoll and two ticks, so every
// model looks again) is measured after. Reported: the tick calls
// that dropped the line and their time, how each model learned (status or
// document) and whether at its first look after the closing, status
// calls by far-back models after the closing, and the requests of each
// window.
func TestMeasureClose(t *testing.T) {
	n := envInt(t, "WAITROOM_CLOSE_N", 0)
	if n == 0 {
		t.Skip("set WAITROOM_CLOSE_N (e.g. 100000) to measure a closing")
	}
	samples := min(envInt(t, "WAITROOM_CLOSE_SAMPLES", 2000), n)
	window := time.Duration(envInt(t, "WAITROOM_CLOSE_WINDOW", 60)) * time.Second
	arrivals := envInt(t, "WAITROOM_CLOSE_ARRIVALS", 50)
	refill := envInt(t, "WAITROOM_CLOSE_REFILL", 100)
	const interval = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, q, rdb := newStore(t, Settings{RefillSize: refill, RefillInterval: interval, SessionTTL: time.Hour})
	fill(t, rdb, q, n)
	if err := s.RefreshSnapshot(ctx, q, true); err != nil {
		t.Fatal(err)
	}

	var closedAt atomic.Int64 // unix ns of the closing; 0 before
	var ticks closeTicks
	ticking := make(chan struct{})
	go func() { defer close(ticking); ticks.run(ctx, t, s, q, interval, &closedAt) }()
	var wg sync.WaitGroup

	// The window each request falls in: 0 before the closing, 1 after.
	var status, docs, enters, refused, soldOut, origin [2]atomic.Int64
	win := func() int {
		if closedAt.Load() != 0 {
			return 1
		}
		return 0
	}
	models := make([]*pageModel, samples)
	for i := range models {
		rank := i * n / samples
		models[i] = &pageModel{user: userID(rank), seq: int64(rank + 1)}
	}
	start := time.Now()
	// After the closing, long enough for every model's next look (a poll
	// interval is at most MaxPoll); requests are compared per minute.
	after := max(window, MaxPoll+2*interval)
	end := start.Add(window + after)
	for _, m := range models {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.run(ctx, t, s, q, interval, end, win, &status, &docs, &origin)
		}()
	}
	wg.Add(1)
	go func() { // newcomers
		defer wg.Done()
		for i := 0; time.Now().Before(end); i++ {
			at := start.Add(time.Duration(i) * time.Second / time.Duration(arrivals))
			if !sleepUntil(ctx, at) {
				return
			}
			w := win()
			if l, ok := s.Line(q, time.Now()); ok && !l.ClosedAt.IsZero() {
				soldOut[w].Add(1) // the gate's sold-out page: no Redis command
				continue
			}
			enters[w].Add(1)
			if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: fmt.Sprintf("new-%d", i)}}); err != nil {
				refused[w].Add(1)
			}
		}
	}()

	// Half an interval after a tick, as a person's click may come.
	if !sleepUntil(ctx, start.Add(window+interval/2)) {
		t.Fatal("stopped")
	}
	waiting, err := rdb.ZCard(ctx, keysFor(q).waiting).Result()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	closedAt.Store(t0.UnixNano()) // a tick call that ends from now on counts
	if _, err := NewInspector(s).Close(ctx, q, Closing{Message: map[string]string{"en": "Sold out."}}, json.RawMessage(`{"kind":"admin","name":"lab"}`)); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	cancel()
	<-ticking

	calls, took, longest, emptied, seen := ticks.report()
	left, err := rdb.ZCard(context.Background(), keysFor(q).waiting).Result()
	if err != nil || left != 0 {
		t.Errorf("%d places left in the line after the drop (%v)", left, err)
	}
	t.Logf("line of %d at the closing (filled %d, refill %d a %v); %d page models, %d newcomers a second, windows of %v",
		waiting, n, refill, interval, samples, arrivals, window)
	t.Logf("drop: %d tick calls after the closing (the last one the tick proper), %v of tick time in all (longest %v); done %v after the closing; the snapshot said closed %v after it",
		calls, took.Round(time.Millisecond), longest.Round(time.Millisecond), emptied.Round(time.Millisecond), seen.Round(time.Millisecond))
	var byStatus, byDoc, first, later, admitted, gone, farStatus int
	var delays []time.Duration
	for _, m := range models {
		switch {
		case m.admitted:
			admitted++
		case m.learned.IsZero():
			gone++
		default:
			if m.viaStatus {
				byStatus++
			} else {
				byDoc++
			}
			if m.looksAfter == 1 {
				first++
			} else {
				later++
			}
			delays = append(delays, m.learned.Sub(t0))
		}
		farStatus += m.farStatusAfter
	}
	slices.Sort(delays)
	pct := func(p float64) time.Duration {
		if len(delays) == 0 {
			return 0
		}
		return delays[min(len(delays)-1, int(p*float64(len(delays))))].Round(time.Millisecond)
	}
	t.Logf("models: %d learned by status, %d by the document; %d at their first look after the closing, %d later; %d admitted before it, %d never told",
		byStatus, byDoc, first, later, admitted, gone)
	t.Logf("time to learn after the closing: p50 %v, p90 %v, max %v; status calls after the closing by models the document placed before it: %d",
		pct(0.5), pct(0.9), pct(1), farStatus)
	for w, name := range []string{"before", "after"} {
		d := []time.Duration{t0.Sub(start), end.Sub(t0)}[w]
		perMin := func(v *[2]atomic.Int64) string {
			return fmt.Sprintf("%d (%.0f/min)", v[w].Load(), float64(v[w].Load())*float64(time.Minute)/float64(d))
		}
		t.Logf("%s the closing (%v): status %s, document reads %s (by %d models), enters %s (refused %d), sold-out pages %s, order-page requests through the gate %s",
			name, d.Round(time.Second), perMin(&status), perMin(&docs), samples, perMin(&enters), refused[w].Load(), perMin(&soldOut), perMin(&origin))
	}
	if later > 0 || gone > 0 {
		t.Logf("note: %d models learned after their first look (their look fell before the snapshot said closed), %d were never told", later, gone)
	}
}

// pageModel is one waiting page, as the script polls: the line's document
// first, its status where the document cannot place it.
type pageModel struct {
	user string
	seq  int64

	learned        time.Time // when it learned the sale is closed
	viaStatus      bool
	looksAfter     int  // looks after the closing, up to the one that told it
	placed         bool // its last look before the closing was the document's
	farStatusAfter int  // status calls after the closing while placed before it
	admitted       bool
	near           bool // its status said it is near the head: it asks its status
}

// nearTicks is how near the head a page asks its status each time rather
// than read the document: the ten ticks PollAfter follows tick by tick.
const nearTicks = 10

func (m *pageModel) run(ctx context.Context, t *testing.T, s *Store, q string, interval time.Duration, end time.Time,
	win func() int, status, docs, origin *[2]atomic.Int64) {
	// The first look at a random point of the poll interval: the crowd
	// is spread, as FirstPollAfter spreads it.
	first := 2 * interval
	if l, ok := s.Line(q, time.Now()); ok {
		if tk, ok := l.Ticket(m.seq, time.Since(l.Read)); ok {
			first = tk.PollAfter()
		}
	}
	next := time.Now().Add(time.Duration(rand.Int64N(int64(first))))
	for next.Before(end) && sleepUntil(ctx, next) {
		w := win()
		if w == 1 {
			m.looksAfter++
		}
		if m.admitted { // inside: the order page, through the gate
			origin[w].Add(1)
			next = next.Add(10 * time.Second)
			continue
		}
		now := time.Now()
		// Near the head the page asks its status each time; further back
		// it reads the document (waiting-line.js), and asks only where
		// the document cannot place it.
		if l, ok := s.Line(q, now); ok && !m.near {
			docs[w].Add(1)
			if !l.ClosedAt.IsZero() {
				m.learned, m.looksAfter = now, max(m.looksAfter, 1)
				return
			}
			if tk, ok := l.Ticket(m.seq, now.Sub(l.Read)); ok {
				m.placed = w == 0
				next = now.Add(tk.PollAfter())
				continue
			}
		}
		status[w].Add(1)
		if w == 1 && m.placed {
			m.farStatusAfter++
		}
		m.placed = false
		tk, err := s.Status(ctx, q, Caller{User: m.user})
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("status: %v", err)
			}
			return
		}
		switch tk.Status {
		case Closed:
			m.learned, m.viaStatus, m.looksAfter = time.Now(), true, max(m.looksAfter, 1)
			return
		case Entered:
			m.admitted = true
			next = time.Now()
		case Waiting:
			next = time.Now().Add(tk.PollAfter())
			m.near = tk.TicksAhead < nearTicks
		default:
			return // not waiting, and not told it is closed
		}
	}
}

// closeTicks ticks a queue as the scheduler does and keeps what the calls
// after the closing took.
type closeTicks struct {
	mu      sync.Mutex
	calls   int
	took    time.Duration
	longest time.Duration
	emptied time.Duration // from the closing to the call that left the line empty
	seen    time.Duration // from the closing to the snapshot that says closed
}

func (k *closeTicks) run(ctx context.Context, t *testing.T, s *Store, q string, interval time.Duration, closedAt *atomic.Int64) {
	for next := time.Now(); sleepUntil(ctx, next); next = next.Add(interval) {
		for {
			at := time.Now()
			res, err := s.Tick(ctx, q)
			took := time.Since(at)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("tick: %v", err)
				}
				return
			}
			if err := s.RefreshSnapshot(ctx, q, res.Applied); err != nil && ctx.Err() == nil {
				t.Errorf("snapshot: %v", err)
			}
			// The calls that began after the closing: the drop, a chunk a
			// call, until one goes on to the tick proper.
			if c := closedAt.Load(); c != 0 && at.UnixNano() >= c {
				since := time.Since(time.Unix(0, c))
				k.mu.Lock()
				if k.emptied == 0 {
					k.calls++
					k.took += took
					k.longest = max(k.longest, took)
					if res.Applied || res.UntilNext > 0 {
						k.emptied = since
					}
				}
				if l, ok := s.Line(q, time.Now()); ok && !l.ClosedAt.IsZero() && k.seen == 0 {
					k.seen = since
				}
				k.mu.Unlock()
			}
			if res.UntilNext > 0 || res.Applied {
				break
			}
		}
	}
}

func (k *closeTicks) report() (calls int, took, longest, emptied, seen time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.calls, k.took, k.longest, k.emptied, k.seen
}

func sleepUntil(ctx context.Context, at time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(at)):
		return true
	}
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a whole number", name, v)
	}
	return n
}
