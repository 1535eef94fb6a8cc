package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// newReplicas returns n stores, each with its own client, on one fresh
// queue with settings stored: replicas sharing a Redis.
func newReplicas(t *testing.T, settings Settings, n int) ([]*Store, string, *redis.Client) {
	t.Helper()
	first, q, rdb := newStore(t, settings)
	stores := []*Store{first}
	for range n - 1 {
		s, err := NewStore(redistest.Client(t), []string{q}, settings, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	if err := NewInspector(first).Seed(context.Background()); err != nil {
		t.Fatal(err)
	}
	return stores, q, rdb
}

// tickAll has every store call Tick every period until stop closes, and
// again when the tick is due before the next call, as the scheduler does
// on every replica; bg counts the goroutines.
func tickAll(t *testing.T, stores []*Store, q string, period time.Duration, stop <-chan struct{}, bg *sync.WaitGroup) {
	tickAllSeen(t, stores, q, period, stop, bg, nil)
}

// tickAllSeen is tickAll that also hands each tick's result to seen (when
// not nil) with the time the call was sent: the tick was applied no sooner.
func tickAllSeen(t *testing.T, stores []*Store, q string, period time.Duration, stop <-chan struct{}, bg *sync.WaitGroup, seen func(sent time.Time, res TickResult)) {
	for _, s := range stores {
		bg.Add(1)
		go func() {
			defer bg.Done()
			wait := period
			for {
				select {
				case <-stop:
					return
				case <-time.After(wait):
				}
				sent := time.Now()
				res, err := s.Tick(context.Background(), q)
				if err != nil {
					t.Error(err)
					return
				}
				if seen != nil {
					seen(sent, res)
				}
				wait = period
				if res.UntilNext > 0 && res.UntilNext < period {
					wait = res.UntilNext
				}
			}
		}()
	}
}

func setMaxActive(t *testing.T, s *Store, q string, n int) {
	t.Helper()
	if err := NewInspector(s).UpdateSettings(context.Background(), q, Update{MaxActive: &n}); err != nil {
		t.Fatal(err)
	}
}

func info(t *testing.T, s *Store, q string) Info {
	t.Helper()
	i, err := s.Info(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// The cap on active users holds for direct entries and for ticks, and a
// slot freed by done or leave is reused at the next tick.
func TestMaxActive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 5, RefillInterval: time.Hour, SessionTTL: time.Hour})
	setMaxActive(t, s, q, 3)
	var in []Ticket
	for i := range 5 {
		tk := enter(t, s, q, fmt.Sprintf("u%d", i))
		if (i < 3) != (tk.Status == Entered) {
			t.Fatalf("u%d: %s; want the first 3 in, the rest waiting (cap 3, 5 tokens)", i, tk.Status)
		}
		in = append(in, tk)
	}
	if i := info(t, s, q); i.Entered != 3 || i.Settings.MaxActive != 3 || i.Waiting != 2 {
		t.Fatalf("info %+v", i)
	}
	if res := tick(t, s, rdb, q); res.Moved != 0 {
		t.Fatalf("a full room's tick moved %d", res.Moved)
	}
	ok, err := s.Done(ctx, q, "u0", in[0].AdmittedAt)
	if err != nil || !ok {
		t.Fatalf("done u0: %v %v", ok, err)
	}
	if err := s.Leave(ctx, q, Caller{User: "u1"}); err != nil {
		t.Fatal(err)
	}
	if res := tick(t, s, rdb, q); res.Moved != 2 {
		t.Fatalf("after done and leave the tick moved %d, want 2", res.Moved)
	}
	if i := info(t, s, q); i.Entered != 3 || i.Waiting != 0 {
		t.Fatalf("info %+v", i)
	}
	// Raising the cap lets the leftover tokens in directly again.
	setMaxActive(t, s, q, 0)
	if tk := enter(t, s, q, "late"); tk.Status != Entered {
		t.Fatalf("no cap: %+v", tk)
	}
}

// done ends only the admission its pass names, once.
func TestDone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, _ := newStore(t, Settings{RefillSize: 5, RefillInterval: time.Hour, SessionTTL: time.Hour})
	a := enter(t, s, q, "a")
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{{a.AdmittedAt.Add(-time.Millisecond), false}, {a.AdmittedAt, true}, {a.AdmittedAt, false}} {
		if ok, err := s.Done(ctx, q, "a", tc.at); err != nil || ok != tc.want {
			t.Fatalf("done at %v: %v, %v; want %v", tc.at, ok, err, tc.want)
		}
	}
	if st := status(t, s, q, "a"); st.Status != NotWaiting {
		t.Fatalf("after done: %+v", st)
	}
	if _, err := s.Done(ctx, q, "", a.AdmittedAt); err == nil {
		t.Fatal("done took an empty user id")
	}
}

// A paused queue admits nobody, keeps every place, and still closes its
// intervals; resuming lets the line move again.
func TestPause(t *testing.T) {
	t.Parallel()
	s, q, rdb := newStore(t, Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour})
	paused, resumed := true, false
	if err := NewInspector(s).UpdateSettings(context.Background(), q, Update{Paused: &paused}); err != nil {
		t.Fatal(err)
	}
	for i, u := range []string{"a", "b", "c"} {
		tk := enter(t, s, q, u)
		if tk.Status != Waiting || tk.Position != int64(i+1) || !tk.Paused {
			t.Fatalf("%s while paused: %+v", u, tk)
		}
	}
	if res := tick(t, s, rdb, q); res.Moved != 0 {
		t.Fatalf("paused tick moved %d", res.Moved)
	}
	if st := status(t, s, q, "c"); st.Status != Waiting || st.Position != 3 || !st.Paused {
		t.Fatalf("c while paused: %+v", st)
	}
	if i := info(t, s, q); !i.Paused {
		t.Fatalf("info %+v", i)
	}
	if err := NewInspector(s).UpdateSettings(context.Background(), q, Update{Paused: &resumed}); err != nil {
		t.Fatal(err)
	}
	if res := tick(t, s, rdb, q); res.Moved != 2 {
		t.Fatalf("resumed tick moved %d", res.Moved)
	}
	if st := status(t, s, q, "c"); st.Position != 1 || st.Paused {
		t.Fatalf("c after resume: %+v", st)
	}
	hist, err := NewInspector(s).History(context.Background(), q)
	if err != nil || len(hist) != 1 || hist[0].Admitted != 0 || hist[0].Waiting != 3 {
		t.Fatalf("history %+v, %v: the paused interval closes with 0 admitted", hist, err)
	}
}

// A tick is never applied sooner than a full interval after the last one,
// however late that one was: the next is due an interval after
// it, not at the start of the next interval of some grid, and the tick's
// reply and the tickets say when.
func TestTicksAreSpaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Long enough that no stall of a loaded machine between the calls
	// below lets the next tick fall due.
	const interval = time.Second
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: interval, SessionTTL: time.Hour})
	k := keysFor(q).tick
	tick(t, s, rdb, q)
	// The next tick is 0.95 interval late (a loaded Redis, replicas
	// stalled): due long ago.
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, k, "next_at_ms", now.Add(-interval*95/100).UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	late, err := s.Tick(ctx, q)
	if err != nil || !late.Applied || late.Late < interval*95/100 || late.UntilNext != interval {
		t.Fatalf("the late tick: %+v, %v; want applied 0.95 interval late, the next an interval away", late, err)
	}
	for _, u := range []string{"in", "w1", "w2"} {
		enter(t, s, q, u)
	}
	res, err := s.Tick(ctx, q)
	if err != nil || res.Applied || res.UntilNext <= 0 || res.UntilNext > interval {
		t.Fatalf("a tick within an interval of the last: %+v, %v; want not applied, due within the interval", res, err)
	}
	if st := status(t, s, q, "w1"); st.UntilNextTick <= 0 || st.UntilNextTick > interval {
		t.Fatalf("w1 waits %s for the next tick; want the rest of the interval", st.UntilNextTick)
	}
	wait.For(t, 10*time.Second, "the next tick to apply", func() (bool, string) {
		res, err := s.Tick(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return res.Applied, fmt.Sprintf("not applied, the next due in %v", res.UntilNext)
	})
	hist, _ := NewInspector(s).History(ctx, q)
	last, _ := rdb.HGet(ctx, k, "at_ms").Int64()
	if gap := time.UnixMilli(last).Sub(hist[len(hist)-1].At); gap < interval {
		t.Fatalf("two ticks %s apart, want at least %s", gap, interval)
	}
}

// During an upgrade a replica still running the tick.lua of before issue
// 20 leaves "min_next_ms" beside an earlier "next_at_ms": the tick waits
// for the later of the two, and the tickets count with it; the next
// applied tick drops the old field.
func TestTickHonoursThePreviousVersionsSpacing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
	k := keysFor(q).tick
	tick(t, s, rdb, q)
	enter(t, s, q, "in")
	enter(t, s, q, "w1")
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, k, "next_at_ms", 1, "min_next_ms", now.Add(time.Minute).UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := s.Tick(ctx, q)
	if err != nil || res.Applied || res.UntilNext <= 0 || res.UntilNext > time.Minute {
		t.Fatalf("tick before min_next_ms: %+v, %v; want not applied, due within the minute", res, err)
	}
	if st := status(t, s, q, "w1"); st.UntilNextTick <= 0 || st.UntilNextTick > time.Minute {
		t.Fatalf("w1 waits %s for the next tick, want min_next_ms's rest", st.UntilNextTick)
	}
	if err := rdb.HSet(ctx, k, "min_next_ms", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Tick(ctx, q); err != nil || !res.Applied {
		t.Fatalf("tick after both: %+v, %v", res, err)
	}
	if n, err := rdb.HExists(ctx, k, "min_next_ms").Result(); err != nil || n {
		t.Fatalf("min_next_ms kept: %v, %v", n, err)
	}
}

// Several replicas race enters, status polls, done calls and ticks on one
// queue with a cap: the cap is never exceeded, no interval admits more than
// refill_size, and every user is admitted exactly once. With sliding
// sessions, pass checks renew admissions in the same race.
func TestCapDoneAndTicksRaceAcrossReplicas(t *testing.T) {
	t.Parallel()
	t.Run("fixed sessions", func(t *testing.T) { t.Parallel(); raceCapDoneAndTicks(t, 0) })
	t.Run("sliding sessions", func(t *testing.T) { t.Parallel(); raceCapDoneAndTicks(t, 2*time.Hour) })
}

func raceCapDoneAndTicks(t *testing.T, sessionMax time.Duration) {
	ctx := context.Background()
	const (
		refill    = 5
		maxActive = 4
		users     = 80
		interval  = 60 * time.Millisecond
	)
	settings := Settings{RefillSize: refill, RefillInterval: interval, SessionTTL: time.Hour, SessionMax: sessionMax, MaxActive: maxActive}
	replicas, q, rdb := newReplicas(t, settings, 3)
	first := replicas[0]
	pick := func() *Store { return replicas[rand.IntN(len(replicas))] }

	stop := make(chan struct{})
	var bg sync.WaitGroup
	tickAll(t, replicas, q, interval/10, stop, &bg)
	var worst atomic.Int64
	bg.Add(1)
	go func() { // watch the active count the whole time
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			now, _ := rdb.Time(ctx).Result()
			n, err := rdb.ZCount(ctx, keysFor(q).entered, "("+strconv.FormatInt(now.Add(-time.Hour).UnixMilli(), 10), "+inf").Result()
			if err == nil && n > worst.Load() {
				worst.Store(n)
			}
		}
	}()

	var doneOK atomic.Int64
	var wg sync.WaitGroup
	for i := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := "u" + strconv.Itoa(i)
			tk, err := pick().Enter(ctx, q, Entry{Caller: Caller{User: u}})
			for err == nil && tk.Status == Waiting {
				time.Sleep(time.Duration(5+rand.IntN(10)) * time.Millisecond)
				tk, err = pick().Status(ctx, q, Caller{User: u})
			}
			if err != nil || tk.Status != Entered {
				t.Errorf("%s: %+v, %v", u, tk, err)
				return
			}
			for range rand.IntN(4) { // buying: the order page checks the pass
				time.Sleep(time.Duration(rand.IntN(7)) * time.Millisecond)
				if ok, err := pick().Current(ctx, q, u, tk.AdmittedAt); err != nil || !ok {
					t.Errorf("%s pass check: %v, %v", u, ok, err)
					return
				}
			}
			ok, err := pick().Done(ctx, q, u, tk.AdmittedAt)
			if err != nil || !ok {
				t.Errorf("%s done: %v, %v", u, ok, err)
				return
			}
			doneOK.Add(1)
		}()
	}
	wg.Wait()
	close(stop)
	bg.Wait()

	if n := doneOK.Load(); n != users {
		t.Fatalf("%d of %d users were admitted and done once", n, users)
	}
	if w := worst.Load(); w > maxActive {
		t.Fatalf("active users reached %d, cap %d", w, maxActive)
	}
	hist, err := NewInspector(first).History(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, p := range hist {
		if p.Admitted > refill {
			t.Fatalf("an interval admitted %d, refill %d: %+v", p.Admitted, refill, p)
		}
		total += p.Admitted
	}
	if i := info(t, first, q); i.Waiting != 0 || i.Entered != 0 {
		t.Fatalf("left over: %+v", i)
	}
	if n, err := rdb.HLen(ctx, keysFor(q).admitted).Result(); err != nil || n != 0 {
		t.Fatalf("renewed sessions' starts left over: %d, %v", n, err)
	}
	t.Logf("%d users through %d intervals, at most %d active at once (cap %d), %d admissions in closed intervals",
		users, len(hist), worst.Load(), maxActive, total)
}
