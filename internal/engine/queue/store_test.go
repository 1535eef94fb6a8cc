package queue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// newStore returns a store with one queue of its own, named after the test,
// so tests can share one Redis and run in parallel.
func newStore(t *testing.T, settings Settings, opts ...Option) (*Store, string, *redis.Client) {
	t.Helper()
	rdb := redistest.Client(t)
	name := fmt.Sprintf("t%d-%s", time.Now().UnixNano(), strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()))
	if len(name) > 64 {
		name = name[:64]
	}
	s, err := NewStore(rdb, []string{name}, settings, 5*time.Second, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s, name, rdb
}

// forceNextInterval makes the next Tick call apply, as if an interval had
// passed since the last tick, so tests step through ticks without waiting
// for the clock.
func forceNextInterval(t *testing.T, rdb *redis.Client, q string) {
	t.Helper()
	if err := rdb.HDel(context.Background(), keysFor(q).tick, "next_at_ms").Err(); err != nil {
		t.Fatal(err)
	}
}

func tick(t *testing.T, s *Store, rdb *redis.Client, q string) TickResult {
	t.Helper()
	forceNextInterval(t, rdb, q)
	res, err := s.Tick(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Applied {
		t.Fatal("forced tick not applied")
	}
	return res
}

func enter(t *testing.T, s *Store, q, user string) Ticket {
	t.Helper()
	tk, err := s.Enter(context.Background(), q, Entry{Caller: Caller{User: user}})
	if err != nil {
		t.Fatalf("enter %s: %v", user, err)
	}
	return tk
}

func status(t *testing.T, s *Store, q, user string) Ticket {
	t.Helper()
	tk, err := s.Status(context.Background(), q, Caller{User: user})
	if err != nil {
		t.Fatalf("status %s: %v", user, err)
	}
	return tk
}

func tokens(t *testing.T, s *Store, q string) int64 {
	t.Helper()
	info, err := s.Info(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return info.Tokens
}

var hour = Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour}

// The reference scenario: 2 tokens per tick, 5 users arrive.
func TestReferenceScenario(t *testing.T) {
	t.Parallel()
	s, q, rdb := newStore(t, hour)

	want := []Status{Entered, Entered, Waiting, Waiting, Waiting}
	for i, u := range []string{"u1", "u2", "u3", "u4", "u5"} {
		tk := enter(t, s, q, u)
		if tk.Status != want[i] {
			t.Fatalf("%s: status %s, want %s", u, tk.Status, want[i])
		}
		if tk.Status == Waiting && tk.Position != int64(i-1) {
			t.Fatalf("%s: position %d, want %d", u, tk.Position, i-1)
		}
	}
	if got := tokens(t, s, q); got != 0 {
		t.Fatalf("tokens after 2 admissions = %d, want 0", got)
	}

	res := tick(t, s, rdb, q)
	if res.Moved != 2 || res.Tokens != 0 || res.Waiting != 1 {
		t.Fatalf("first tick = %+v, want moved 2, tokens 0, waiting 1", res)
	}
	for _, u := range []string{"u3", "u4"} {
		if st := status(t, s, q, u).Status; st != Entered {
			t.Fatalf("%s after first tick: %s, want ENTERED", u, st)
		}
	}
	if tk := status(t, s, q, "u5"); tk.Status != Waiting || tk.Position != 1 {
		t.Fatalf("u5 after first tick: %+v, want WAITING at 1", tk)
	}

	res = tick(t, s, rdb, q)
	if res.Moved != 1 || res.Tokens != 1 || res.Waiting != 0 || res.Admitted != 2 {
		t.Fatalf("second tick = %+v, want moved 1, tokens 1, waiting 0, 2 admitted in the interval before", res)
	}
	for i := 0; i < 3; i++ {
		if res = tick(t, s, rdb, q); res.Moved != 0 || res.Tokens != 2 {
			t.Fatalf("idle tick %d = %+v, want moved 0, tokens 2 (never above refill_size)", i, res)
		}
	}
	if got := tokens(t, s, q); got != 2 {
		t.Fatalf("tokens after idle ticks = %d, want 2", got)
	}
}

func TestNewcomerNeverJumpsTheLine(t *testing.T) {
	t.Parallel()
	s, q, rdb := newStore(t, hour)
	for _, u := range []string{"a", "b", "c"} {
		enter(t, s, q, u)
	}
	// Tokens lost (e.g. evicted) while people wait: a full bucket is
	// assumed, but the newcomer still queues behind the line.
	if err := rdb.Del(context.Background(), keysFor(q).tokens).Err(); err != nil {
		t.Fatal(err)
	}
	if tk := enter(t, s, q, "d"); tk.Status != Waiting || tk.Position != 2 {
		t.Fatalf("newcomer = %+v, want WAITING at 2", tk)
	}
}

func TestReentryGoesToTheBack(t *testing.T) {
	t.Parallel()
	s, q, _ := newStore(t, hour)
	for _, u := range []string{"in1", "in2", "a", "b", "c"} {
		enter(t, s, q, u)
	}
	if tk := enter(t, s, q, "a"); tk.Status != Waiting || tk.Position != 3 || tk.Waiting != 3 {
		t.Fatalf("re-entered a = %+v, want WAITING at 3 of 3", tk)
	}
	if p := status(t, s, q, "b").Position; p != 1 {
		t.Fatalf("b position = %d, want 1", p)
	}
	// An admitted user entering again gives up the admission and queues.
	if tk := enter(t, s, q, "in1"); tk.Status != Waiting || tk.Position != 4 {
		t.Fatalf("re-entered in1 = %+v, want WAITING at 4", tk)
	}
}

func TestLeave(t *testing.T) {
	t.Parallel()
	s, q, _ := newStore(t, hour)
	ctx := context.Background()
	for _, u := range []string{"in1", "in2", "a", "b", "c"} {
		enter(t, s, q, u)
	}
	for i := 0; i < 2; i++ { // idempotent
		if err := s.Leave(ctx, q, Caller{User: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	if st := status(t, s, q, "a").Status; st != NotWaiting {
		t.Fatalf("a after leave: %s", st)
	}
	if tk := status(t, s, q, "c"); tk.Position != 2 || tk.Waiting != 2 {
		t.Fatalf("c after a left = %+v, want position 2 of 2", tk)
	}
	if err := s.Leave(ctx, q, Caller{User: "in1"}); err != nil {
		t.Fatal(err)
	}
	if st := status(t, s, q, "in1").Status; st != NotWaiting {
		t.Fatalf("admitted user after leave: %s", st)
	}
	if err := s.Leave(ctx, q, Caller{User: "never-here"}); err != nil {
		t.Fatal(err)
	}
}

func TestETA(t *testing.T) {
	t.Parallel()
	s, q, rdb := newStore(t, hour)
	tick(t, s, rdb, q) // the first tick, which the scheduler applies at start
	enter(t, s, q, "in1")
	enter(t, s, q, "in2")
	for pos := int64(1); pos <= 5; pos++ {
		tk := enter(t, s, q, fmt.Sprintf("w%d", pos))
		// ETA = time to next tick + (ceil(pos/2) - 1) intervals.
		full := time.Duration((pos+1)/2-1) * time.Hour
		if tk.UntilNextTick <= 0 || tk.UntilNextTick > time.Hour {
			t.Fatalf("until next tick = %s, want in (0, 1h]", tk.UntilNextTick)
		}
		if tk.ETA != tk.UntilNextTick+full {
			t.Fatalf("position %d: ETA %s, want %s + %s", pos, tk.ETA, tk.UntilNextTick, full)
		}
	}
	if tk := status(t, s, q, "w5"); tk.ETA < 2*time.Hour || tk.ETA > 3*time.Hour {
		t.Fatalf("status ETA for position 5 = %s, want within (2h, 3h]", tk.ETA)
	}

	// The next tick is due but no replica has applied it yet (the
	// scheduler does at once): the head of the line is told it is next,
	// not that it waits a whole interval more.
	if err := rdb.HSet(context.Background(), keysFor(q).tick, "next_at_ms", 1).Err(); err != nil {
		t.Fatal(err)
	}
	for pos, want := range map[string]time.Duration{"w1": 0, "w2": 0, "w3": time.Hour, "w5": 2 * time.Hour} {
		if tk := status(t, s, q, pos); tk.UntilNextTick != 0 || tk.ETA != want {
			t.Errorf("%s with the tick due: until next %s, ETA %s, want 0 and %s", pos, tk.UntilNextTick, tk.ETA, want)
		}
	}
}

func TestSessionTTLAndPurge(t *testing.T) {
	t.Parallel()
	settings := Settings{RefillSize: 5000, RefillInterval: time.Hour, SessionTTL: 200 * time.Millisecond}
	s, q, rdb := newStore(t, settings)
	ctx := context.Background()
	const n = 2500
	for i := 0; i < n; i++ {
		enter(t, s, q, fmt.Sprintf("u%d", i))
	}
	// Expiry is on the Redis clock: wait until the last admission lapsed.
	wait.For(t, time.Minute, "the admissions to expire", func() (bool, string) {
		st := status(t, s, q, fmt.Sprintf("u%d", n-1))
		return st.Status == NotWaiting, fmt.Sprint(st.Status)
	})
	if info, _ := s.Info(ctx, q); info.Entered != 0 {
		t.Fatalf("entered after TTL = %d, want 0", info.Entered)
	}
	// The purge is bounded per tick.
	for want := int64(n); want > 0; want -= purgeBatch {
		res := tick(t, s, rdb, q)
		if res.Purged != min(want, purgeBatch) {
			t.Fatalf("purged %d, want %d", res.Purged, min(want, purgeBatch))
		}
	}
	if left := rdb.ZCard(ctx, keysFor(q).entered).Val(); left != 0 {
		t.Fatalf("entered set holds %d after purges", left)
	}
}

func TestTickIsAppliedOncePerInterval(t *testing.T) {
	t.Parallel()
	s, q, rdb := newStore(t, Settings{RefillSize: 3, RefillInterval: time.Hour, SessionTTL: time.Hour})
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		enter(t, s, q, fmt.Sprintf("u%d", i))
	}
	forceNextInterval(t, rdb, q)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		applied int
		moved   int64
	)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Tick(ctx, q)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if res.Applied {
				applied++
			}
			moved += res.Moved
		}()
	}
	wg.Wait()
	if applied != 1 || moved != 3 {
		t.Fatalf("50 concurrent ticks in one interval: applied %d, moved %d; want 1 and 3", applied, moved)
	}
}

// Thousands of users enter at once from many goroutines: exactly the bucket
// is admitted, everyone else holds a distinct place, nobody is lost.
func TestConcurrentEnter(t *testing.T) {
	t.Parallel()
	const users, workers, refill = 4000, 64, 50
	s, q, rdb := newStore(t, Settings{RefillSize: refill, RefillInterval: time.Hour, SessionTTL: time.Hour})
	ctx := context.Background()

	tickets := make([]Ticket, users)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				tk, err := s.Enter(ctx, q, Entry{Caller: Caller{User: fmt.Sprintf("user-%d", i)}})
				if err != nil {
					t.Error(err)
					continue
				}
				tickets[i] = tk
			}
		}()
	}
	for i := 0; i < users; i++ {
		next <- i
	}
	close(next)
	wg.Wait()

	entered := 0
	seen := make(map[int64]bool)
	for i, tk := range tickets {
		switch tk.Status {
		case Entered:
			entered++
		case Waiting:
			if tk.Position < 1 || tk.Position > users-refill || seen[tk.Position] {
				t.Fatalf("user-%d got position %d (duplicate or out of range)", i, tk.Position)
			}
			seen[tk.Position] = true
		default:
			t.Fatalf("user-%d: status %q", i, tk.Status)
		}
	}
	if entered != refill || len(seen) != users-refill {
		t.Fatalf("entered %d, waiting %d; want %d and %d", entered, len(seen), refill, users-refill)
	}
	// Concurrent status calls, gathered into shared script calls, each get
	// their own user's answer.
	statuses := make([]Ticket, users+100)
	next = make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				tk, err := s.Status(ctx, q, Caller{User: fmt.Sprintf("user-%d", i)}) // i >= users: never entered
				if err != nil {
					t.Error(err)
					continue
				}
				statuses[i] = tk
			}
		}()
	}
	for i := range statuses {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, st := range statuses {
		want := NotWaiting
		if i < users {
			want = tickets[i].Status
		}
		if st.Status != want || (want == Waiting && st.Position != tickets[i].Position) {
			t.Fatalf("status of user-%d = %+v, want %s at %d", i, st, want, tickets[min(i, users-1)].Position)
		}
	}

	k := keysFor(q)
	if n := rdb.ZCard(ctx, k.waiting).Val(); n != users-refill {
		t.Fatalf("line holds %d, want %d", n, users-refill)
	}
	if n := rdb.ZCard(ctx, k.entered).Val(); n != refill {
		t.Fatalf("entered set holds %d, want %d", n, refill)
	}

	// Ticks then empty the line in arrival order, refill at a time.
	for moved := int64(0); moved < users-refill; {
		head := rdb.ZRange(ctx, k.waiting, 0, refill-1).Val()
		res := tick(t, s, rdb, q)
		if res.Moved != int64(len(head)) {
			t.Fatalf("tick moved %d, want %d", res.Moved, len(head))
		}
		for _, u := range head {
			if status(t, s, q, u).Status != Entered {
				t.Fatalf("%s was at the head but not admitted", u)
			}
		}
		moved += res.Moved
	}
	if n := rdb.ZCard(ctx, k.entered).Val(); n != users {
		t.Fatalf("entered set holds %d after draining, want %d", n, users)
	}
}

// A tick's lateness counts from when it was due: a queue's first tick is
// not late, and one that comes after whole intervals were missed says so
// (not just how far into the current interval it came).
func TestTickLateness(t *testing.T) {
	t.Parallel()
	const interval = 100 * time.Millisecond
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: interval, SessionTTL: time.Hour})
	ctx := context.Background()
	first, err := s.Tick(ctx, q)
	if err != nil || !first.Applied || first.Late != 0 {
		t.Fatalf("first tick: %+v, %v; want applied, not late", first, err)
	}
	// Due at most one interval after the first; three and a half missed.
	time.Sleep(3*interval + interval/2)
	res, err := s.Tick(ctx, q)
	if err != nil || !res.Applied || res.Late < 2*interval+interval/2 {
		t.Fatalf("tick after missed intervals: %+v, %v; want applied, at least %s late", res, err, 2*interval+interval/2)
	}
}

// Enters, status polls and ticks race for a while with a real clock; the
// history shows no interval ever admitted more than the bucket, and every
// user ends up counted once.
func TestConcurrentEnterAndTicks(t *testing.T) {
	t.Parallel()
	const refill = 7
	s, q, rdb := newStore(t, Settings{RefillSize: refill, RefillInterval: 50 * time.Millisecond, SessionTTL: time.Hour})
	ctx := context.Background()

	stop := make(chan struct{})
	var tickers sync.WaitGroup
	for r := 0; r < 3; r++ { // three "replicas" calling the tick
		tickers.Add(1)
		go func() {
			defer tickers.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				if _, err := s.Tick(ctx, q); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}

	const users = 600
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < users; i += 8 {
				u := fmt.Sprintf("u%d", i)
				if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: u}}); err != nil {
					t.Error(err)
				}
				if _, err := s.Status(ctx, q, Caller{User: u}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	// Let the line drain, then stop the tickers.
	wait.For(t, 2*time.Minute, "the line to drain", func() (bool, string) {
		n := rdb.ZCard(ctx, keysFor(q).waiting).Val()
		return n == 0, fmt.Sprintf("%d waiting", n)
	})
	close(stop)
	tickers.Wait()

	if n := rdb.ZCard(ctx, keysFor(q).entered).Val(); n != users {
		t.Fatalf("entered %d, want %d", n, users)
	}
	points, err := NewInspector(s).History(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var admitted int64
	lastInterval := int64(-1)
	for _, p := range points {
		if p.Admitted > refill {
			t.Fatalf("a tick admitted %d > refill size %d", p.Admitted, refill)
		}
		iv := p.At.UnixMilli() / 50
		if iv <= lastInterval {
			t.Fatalf("two ticks in interval %d", iv)
		}
		lastInterval = iv
		admitted += p.Admitted
	}
	// The interval still open is not in the history yet.
	open, err := rdb.HMGet(ctx, keysFor(q).tick, "moved", "direct").Result()
	if err != nil {
		t.Fatal(err)
	}
	var current int64
	for _, v := range open {
		n, _ := strconv.ParseInt(fmt.Sprint(v), 10, 64)
		current += n
	}
	if admitted+current != users {
		t.Fatalf("history admitted %d + %d in the open interval, want %d", admitted, current, users)
	}
}

func TestRefillSizeChangeTakesEffectAtNextTick(t *testing.T) {
	t.Parallel()
	s, q, rdb := newStore(t, hour)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		enter(t, s, q, fmt.Sprintf("u%d", i))
	}
	if err := NewInspector(s).UpdateSettings(ctx, q, Update{RefillSize: ptr(5)}); err != nil {
		t.Fatal(err)
	}
	if res := tick(t, s, rdb, q); res.Moved != 5 {
		t.Fatalf("moved %d after raising refill size to 5", res.Moved)
	}
	// Lowering the size caps tokens already in the bucket.
	for i := 0; i < 3; i++ {
		tick(t, s, rdb, q) // drain the line: 13 left → 8 → 3 → 0
	}
	if got := tokens(t, s, q); got != 2 {
		t.Fatalf("tokens = %d, want 2", got)
	}
	if err := NewInspector(s).UpdateSettings(ctx, q, Update{RefillSize: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	if got := tokens(t, s, q); got != 1 {
		t.Fatalf("tokens after lowering to 1 = %d, want 1", got)
	}
	enter(t, s, q, "x")
	if tk := enter(t, s, q, "y"); tk.Status != Waiting {
		t.Fatalf("second newcomer with refill size 1: %s, want WAITING", tk.Status)
	}
	for _, bad := range []int{0, -1, MaxRefillSize + 1} {
		var fe *FieldError
		if err := NewInspector(s).UpdateSettings(ctx, q, Update{RefillSize: ptr(bad)}); !errors.As(err, &fe) || fe.Field != "refill_size" {
			t.Fatalf("refill_size %d: %v, want a FieldError for refill_size", bad, err)
		}
	}
}

func TestUnknownQueueCreatesNothing(t *testing.T) {
	t.Parallel()
	s, _, rdb := newStore(t, hour)
	ctx := context.Background()
	if _, err := s.Enter(ctx, "nope", Entry{Caller: Caller{User: "u"}}); err != ErrUnknownQueue {
		t.Fatalf("enter: %v", err)
	}
	if _, err := s.Tick(ctx, "nope"); err != ErrUnknownQueue {
		t.Fatalf("tick: %v", err)
	}
	if keys := rdb.Keys(ctx, "wr:{nope}:*").Val(); len(keys) != 0 {
		t.Fatalf("keys created for an unknown queue: %v", keys)
	}
}

func TestValidateUserID(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"u", true},
		{"사용자-1", true},
		{strings.Repeat("a", MaxUserIDBytes), true},
		{"", false},
		{strings.Repeat("a", MaxUserIDBytes+1), false},
		{"bad\x00", false},
		{"tab\there", false},
		{"\xff\xfe", false},
		{"del\u007f", false},
	} {
		if err := ValidateUserID(tc.id); (err == nil) != tc.ok {
			t.Errorf("ValidateUserID(%q) = %v, want ok=%v", tc.id, err, tc.ok)
		}
	}
}

func TestKeysShareOneHashTag(t *testing.T) {
	k := keysFor("q1")
	for _, key := range []string{k.waiting, k.entered, k.tokens, k.seq, k.config, k.tick, k.history} {
		if !strings.HasPrefix(key, "wr:{q1}:") || strings.Count(key, "{") != 1 {
			t.Errorf("key %q does not carry the hash tag {q1} exactly once", key)
		}
	}
}

// One enter.lua call for many users ends in the same state, and gives the
// same statuses, as one call per user in the same order. Its positions are
// the users' places once the whole call is done (one call per user answers
// with the place at that user's step, which a later user of the same call
// moving to the back can still lower), so a user given twice in one call
// gets the same, final, place both times. status.lua likewise answers for
// many users at once exactly as it does for each alone.
func TestOneCallForManyUsersMatchesOneCallEach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name  string
		setup []string // entered one by one first
		batch []string
	}{
		{"empty queue, more users than tokens", nil, []string{"a", "b", "c", "d", "e"}},
		{"line already waiting", []string{"x", "y", "z"}, []string{"a", "b"}},
		{"re-entry from the line and from admission", []string{"x", "y", "z", "w"}, []string{"a", "z", "x", "b"}},
		{"duplicates in the line part", []string{"x", "y", "z"}, []string{"a", "b", "a", "y", "b", "c"}},
		{"duplicate across admission and line", nil, []string{"a", "b", "a", "c"}},
		{"duplicate within admission", nil, []string{"a", "a", "b"}},
		{"one token left", []string{"x"}, []string{"a", "b", "c"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			one, qOne, rdb := newStore(t, Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour})
			each, qEach, _ := newStore(t, Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour})
			for _, u := range tc.setup {
				enter(t, one, qOne, u)
				enter(t, each, qEach, u)
			}

			got := runEnterCall(t, one, qOne, tc.batch...)
			want := make([]Ticket, len(tc.batch))
			for i, u := range tc.batch {
				want[i] = runEnterCall(t, each, qEach, u)[0]
			}
			line := rdb.ZRange(ctx, keysFor(qOne).waiting, 0, -1).Val()
			for i, u := range tc.batch {
				w := want[i]
				if w.Status == Waiting {
					w.Position = int64(slices.Index(line, u) + 1)
				}
				w.Waiting = int64(len(line))
				if got[i].Status != w.Status || got[i].Position != w.Position || got[i].Waiting != w.Waiting {
					t.Errorf("user %d (%s): one call gave %s at %d of %d, want %s at %d of %d",
						i, u, got[i].Status, got[i].Position, got[i].Waiting, w.Status, w.Position, w.Waiting)
				}
			}

			kOne, kEach := keysFor(qOne), keysFor(qEach)
			if a, b := rdb.ZRange(ctx, kOne.waiting, 0, -1).Val(), rdb.ZRange(ctx, kEach.waiting, 0, -1).Val(); !slices.Equal(a, b) {
				t.Errorf("line %v after one call, %v after one call each", a, b)
			}
			// Admission times differ by when each call ran, so the entered
			// sets are compared as sets.
			a, b := rdb.ZRange(ctx, kOne.entered, 0, -1).Val(), rdb.ZRange(ctx, kEach.entered, 0, -1).Val()
			slices.Sort(a)
			slices.Sort(b)
			if !slices.Equal(a, b) {
				t.Errorf("entered %v after one call, %v after one call each", a, b)
			}
			if a, b := rdb.Get(ctx, kOne.tokens).Val(), rdb.Get(ctx, kEach.tokens).Val(); a != b {
				t.Errorf("tokens %q after one call, %q after one call each", a, b)
			}
			if a, b := rdb.HGet(ctx, kOne.tick, "direct").Val(), rdb.HGet(ctx, kEach.tick, "direct").Val(); a != b {
				t.Errorf("direct admissions %q after one call, %q after one call each", a, b)
			}

			users := append(slices.Clone(tc.batch), tc.setup...)
			users = append(users, "never-came")
			gotStatus := runStatusCall(t, one, qOne, users...)
			for i, u := range users {
				w := status(t, one, qOne, u)
				if gotStatus[i].Status != w.Status || gotStatus[i].Position != w.Position {
					t.Errorf("status of %s: one call %+v, alone %+v", u, gotStatus[i], w)
				}
			}
		})
	}
}

// runEnterCall runs enter.lua once for users, bypassing the batcher.
// A call into a sealed draw's pre-queue that this replica has not read
// the seal of is read and made again, as Store.Enter does.
func runEnterCall(t *testing.T, s *Store, q string, users ...string) []Ticket {
	t.Helper()
	for range 3 {
		tickets := runCall(t, s.queues[q].enters.run, users)
		stale, ok := tickets[0].refused.(drawStale)
		if !ok {
			return tickets
		}
		if err := s.readSeal(context.Background(), q, stale.gen); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("the draw's seal kept changing")
	return nil
}

// runStatusCall runs status.lua once for users, bypassing the batcher.
func runStatusCall(t *testing.T, s *Store, q string, users ...string) []Ticket {
	t.Helper()
	return runCall(t, s.queues[q].statuses.run, users)
}

func runCall(t *testing.T, run func(context.Context, []Caller) ([]Ticket, error), users []string) []Ticket {
	t.Helper()
	calls := make([]Caller, len(users))
	for i, u := range users {
		calls[i] = Caller{User: u}
	}
	tickets, err := run(context.Background(), calls)
	if err != nil {
		t.Fatal(err)
	}
	return tickets
}

// An admission is named by its start on the Redis clock: enter and status
// report the same one, a tick's admission starts at the tick, and entering
// again ends it (Admission is what revokes entry passes).
func TestAdmissionTimes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ttl := time.Hour
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: ttl})
	redisNow := func() time.Time {
		t.Helper()
		now, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return now
	}

	before := redisNow().Truncate(time.Millisecond)
	a := enter(t, s, q, "a")
	after := redisNow()
	if a.Status != Entered || a.AdmittedAt.Before(before) || a.AdmittedAt.After(after) || a.SessionTTL != ttl {
		t.Fatalf("a = %+v, want admitted between %v and %v with TTL %s", a, before, after, ttl)
	}
	if !a.AdmissionEnds().Equal(a.AdmittedAt.Add(ttl)) {
		t.Fatalf("admission ends %v", a.AdmissionEnds())
	}
	if st := status(t, s, q, "a"); !st.AdmittedAt.Equal(a.AdmittedAt) || st.SessionTTL != ttl {
		t.Fatalf("status of a = %+v, enter said %v", st, a.AdmittedAt)
	}
	if start, ok, err := s.Admission(ctx, q, "a"); err != nil || !ok || !start.Equal(a.AdmittedAt) {
		t.Fatalf("Admission(a) = %v, %v, %v", start, ok, err)
	}

	b := enter(t, s, q, "b")
	if b.Status != Waiting || !b.AdmittedAt.IsZero() {
		t.Fatalf("b = %+v", b)
	}
	if _, ok, err := s.Admission(ctx, q, "b"); ok || err != nil {
		t.Fatalf("Admission of a waiting user: %v, %v", ok, err)
	}
	tickAt := redisNow().Truncate(time.Millisecond)
	tick(t, s, rdb, q)
	bIn := status(t, s, q, "b")
	if bIn.Status != Entered || bIn.AdmittedAt.Before(tickAt) || bIn.AdmittedAt.After(redisNow()) {
		t.Fatalf("b after the tick = %+v (tick at %v)", bIn, tickAt)
	}

	// a enters again: the admission ends (no token left, so a waits).
	if again := enter(t, s, q, "a"); again.Status != Waiting {
		t.Fatalf("a again = %+v", again)
	}
	if _, ok, _ := s.Admission(ctx, q, "a"); ok {
		t.Fatal("re-entry kept the admission")
	}
	for _, tc := range []struct{ queue, user string }{{"not-declared", "b"}, {q, ""}, {q, "nobody"}} {
		if _, ok, err := s.Admission(ctx, tc.queue, tc.user); ok || err != nil {
			t.Errorf("Admission(%q, %q) = %v, %v; want none", tc.queue, tc.user, ok, err)
		}
	}
}

// Join keeps the place of a user who already holds one (a second device of
// the same account) and enters one who holds none.
func TestJoinKeepsAPlaceHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
	in, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "in"}, Join: true})
	if err != nil || in.Status != Entered {
		t.Fatalf("join in = %+v, %v", in, err)
	}
	if again, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "in"}, Join: true}); err != nil || again.Status != Entered || !again.AdmittedAt.Equal(in.AdmittedAt) {
		t.Fatalf("join in again = %+v, %v; want the same admission", again, err)
	}
	for _, u := range []string{"w1", "w2", "w3"} {
		enter(t, s, q, u)
	}
	if tk, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "w1"}, Join: true}); err != nil || tk.Status != Waiting || tk.Position != 1 {
		t.Fatalf("join w1 = %+v, %v; want it kept at 1", tk, err)
	}
	if tk, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "new"}, Join: true}); err != nil || tk.Status != Waiting || tk.Position != 4 {
		t.Fatalf("join new = %+v, %v; want the back (4)", tk, err)
	}
}

// Enter is the API's enter in one call: a join keeps a place held,
// and the anonymous place it replaces leaves the line before the answer,
// which counts the line without it; a refused join replaces nothing.
func TestEnterJoinReplaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
	if tk, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "in"}}); err != nil || tk.Status != Entered {
		t.Fatalf("enter in = %+v, %v", tk, err)
	}
	for _, u := range []string{"w1", "anon", "w2", "anon2"} {
		enter(t, s, q, u)
	}

	// The member joins at the back (5th), and the anonymous place at 2
	// goes: the answer says 4th of 4.
	tk, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "member"}, Join: true, Replaces: "anon"})
	if err != nil || tk.Status != Waiting || tk.Position != 4 || tk.Waiting != 4 {
		t.Fatalf("join replacing anon = %+v, %v; want waiting at 4 of 4", tk, err)
	}
	if st := status(t, s, q, "anon"); st.Status != NotWaiting || st.Reason != ReasonLeft {
		t.Fatalf("the replaced place: %+v", st)
	}

	// Joining again keeps the member's place; naming it as the place
	// replaced changes nothing either.
	for _, replaces := range []string{"", "member"} {
		tk, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "member"}, Join: true, Replaces: replaces})
		if err != nil || tk.Status != Waiting || tk.Position != 4 {
			t.Fatalf("join again (replacing %q) = %+v, %v; want the place kept at 4", replaces, tk, err)
		}
	}

	// Refused (no proof of work): the place it would replace stays.
	difficulty := 8
	if err := NewInspector(s).UpdateSettings(ctx, q, Update{ChallengeDifficulty: &difficulty}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "late"}, Join: true, Replaces: "anon2"}); !errors.Is(err, ErrChallengeRequired) {
		t.Fatalf("join without a proof: %v, want ErrChallengeRequired", err)
	}
	if st := status(t, s, q, "anon2"); st.Status != Waiting || st.Position != 3 {
		t.Fatalf("the place a refused join named: %+v, want kept at 3", st)
	}
}
