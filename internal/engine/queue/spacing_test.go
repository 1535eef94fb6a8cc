package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// The rate a queue promises the order page: in any window of k
// refill intervals, [a, a + k×interval) on the Redis clock, at most
// (k + 1) × refill_size users are admitted, direct entries included. The
// tests below check it from the admission times themselves (the entered
// set's scores), for every window that starts at an admission (where the
// fullest windows start), k = 1..maxWindow.

const maxWindow = 5

// admissionTimes returns the admission times (ms, Redis clock) of the
// queue's entered set, sorted. The tests below never end an admission,
// so every admission of the run is there.
func admissionTimes(t *testing.T, rdb *redis.Client, q string) []int64 {
	t.Helper()
	zs, err := rdb.ZRangeWithScores(context.Background(), keysFor(q).entered, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	at := make([]int64, len(zs))
	for i, z := range zs {
		at[i] = int64(z.Score)
	}
	slices.Sort(at)
	return at
}

// fullestWindows returns, for each k = 1..maxWindow, the most admissions
// of at (sorted, ms) within one window [a, a + k×interval), with the span
// (first to last) of that crowd, and fails the test for every k whose
// fullest window admits more than (k + 1) × limit(a + k×interval): the
// refill size in force at the window's end (refill sizes only rise in
// these tests, so it is the largest any interval the window touches had).
func fullestWindows(t *testing.T, at []int64, interval time.Duration, limit func(endMS int64) int) {
	t.Helper()
	iv := interval.Milliseconds()
	for k := int64(1); k <= maxWindow; k++ {
		most, span, over := 0, int64(0), ""
		j := 0
		for i, a := range at {
			j = max(j, i)
			for j < len(at) && at[j] < a+k*iv {
				j++
			}
			n := j - i
			if n > most {
				most, span = n, at[j-1]-a
			}
			if bound := (int(k) + 1) * limit(a+k*iv); n > bound && over == "" {
				over = fmt.Sprintf("%d admitted within %d ms (from %d), at most %d may be", n, at[j-1]-a, a, bound)
			}
		}
		t.Logf("k=%d (%s): at most %d admitted in one window (within %d ms)", k, time.Duration(k)*interval, most, span)
		if over != "" {
			t.Errorf("k=%d: %s", k, over)
		}
	}
}

// redisPhase returns the Redis clock (ms) and how far into an interval of
// the Redis clock's own grid (multiples of interval) it is, 0..1.
func redisPhase(t *testing.T, rdb *redis.Client, interval time.Duration) (int64, float64) {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	ms := now.UnixMilli()
	return ms, float64(ms%interval.Milliseconds()) / float64(interval.Milliseconds())
}

// awaitPhase polls the Redis clock until it is between from and to (0..1)
// into an interval of its grid. Where ticks fall on that grid does not
// matter to the bound; it is where the script before the spacing bound let a late
// tick be followed by the next one 0.9 interval later, so the test puts
// its late ticks there.
func awaitPhase(t *testing.T, rdb *redis.Client, interval time.Duration, from, to float64) {
	t.Helper()
	// The phase comes round every interval; the deadline bounds a hang.
	// wait.For's steps grow to 100 ms, longer than the window (a few ms of
	// a 100 ms interval), so the phase is polled here every millisecond.
	deadline := time.Now().Add(time.Minute)
	for {
		_, p := redisPhase(t, rdb, interval)
		if p >= from && p <= to {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the clock's phase never fell in [%v, %v] of the interval in a minute (last %v)", from, to, p)
		}
		time.Sleep(time.Millisecond)
	}
}

// Two replicas' stores on one Redis call Tick on their own timers (ten
// times per interval each, half a period apart), from a queue's first
// tick on, while users arrive in waves: the first of a wave enter directly
// on the tokens left, most wait. A crowd enters just before the first
// tick, so that the initial bucket and the first tick's refill go in
// together; later both replicas stall for more than an interval (a
// loaded Redis, a GC pause), so a tick is applied late, and the tick after
// it must still wait a full interval. However the timers fall, no window
// of k intervals admits more than (k + 1) × refill_size.
func TestAdmissionsPerWindowWithReplicasAndALateTick(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const (
		refill   = 2
		interval = 250 * time.Millisecond
		period   = interval / 10
	)
	stores, q, rdb := newReplicas(t, Settings{RefillSize: refill, RefillInterval: interval, SessionTTL: time.Hour}, 2)
	rng := rand.New(rand.NewPCG(20, uint64(time.Now().UnixNano())))

	var users atomic.Int64
	enterWave := func(n int) {
		var wg sync.WaitGroup
		for range n {
			u := "u" + strconv.FormatInt(users.Add(1), 10)
			s := stores[rng.IntN(len(stores))]
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: u}}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}

	// The replicas' timers. While stalled (until heldUntil, local clock)
	// neither calls the tick.
	var heldUntil atomic.Int64
	stop := make(chan struct{})
	var bg sync.WaitGroup
	tickOnTimer := func(s *Store, offset time.Duration) {
		defer bg.Done()
		next := time.Now().Add(offset)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Until(next)):
			}
			next = next.Add(period)
			if time.Now().UnixNano() < heldUntil.Load() {
				continue
			}
			if _, err := s.Tick(ctx, q); err != nil {
				t.Error(err)
				return
			}
		}
	}

	// A fresh queue's first users, late in an interval of the Redis
	// clock's grid, then the first tick at once.
	awaitPhase(t, rdb, interval, 0.85, 0.9)
	enterWave(3 * refill) // refill of them directly, on the initial bucket
	bg.Add(2)
	go tickOnTimer(stores[0], 0)
	go tickOnTimer(stores[1], period/2)

	// Waves of arrivals, each while the line may have drained; half-way
	// both replicas stall from mid-interval to late in the next one.
	for wave := 0; wave < 12; wave++ {
		if wave == 6 {
			awaitPhase(t, rdb, interval, 0.4, 0.6)
			heldUntil.Store(time.Now().Add(10 * time.Second).UnixNano())
			time.Sleep(interval)
			awaitPhase(t, rdb, interval, 0.88, 0.93)
			enterWave(refill) // arriving just before the late tick
			heldUntil.Store(0)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(2 * interval))))
		enterWave(1 + rng.IntN(2*refill))
	}

	// Let the line drain: every user is admitted in the end.
	wait.For(t, 30*time.Second, "the line to drain", func() (bool, string) {
		in := info(t, stores[0], q)
		return in.Waiting == 0, fmt.Sprintf("%+v", in)
	})
	close(stop)
	bg.Wait()

	at := admissionTimes(t, rdb, q)
	if len(at) != int(users.Load()) {
		t.Fatalf("%d admissions of %d users", len(at), users.Load())
	}
	fullestWindows(t, at, interval, func(int64) int { return refill })
}

// Random schedules, one per seed: two replicas' stores tick on timers of
// their own random periods (a twentieth to three tenths of an interval),
// the first call up to two intervals after the start, each timer now and
// then stalling for one to two and a half intervals, so ticks come on
// time, late, or from either; meanwhile users enter one at a time or in a
// crowd (often about when the next tick is due: just before, or after but
// before a replica applies it), some leave the line, and the operator
// pauses and resumes, raises the refill size mid-interval and schedules
// an opening with a draw. Time is the real clock and every wait random:
// the bound must hold whatever they are.
func TestAdmissionsPerWindowOnRandomSchedules(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			randomSchedule(t, seed)
		})
	}
}

func randomSchedule(t *testing.T, seed uint64) {
	ctx := context.Background()
	const interval = 50 * time.Millisecond
	rng := rand.New(rand.NewPCG(seed, 20))
	refill := 2 + rng.IntN(2)
	stores, q, rdb := newReplicas(t, Settings{RefillSize: refill, RefillInterval: interval, SessionTTL: time.Hour}, 2)
	pick := func() *Store { return stores[rng.IntN(len(stores))] }

	// The refill sizes set, each from when (Redis clock, ms, read before
	// the change: it takes effect no sooner).
	type change struct {
		from int64
		size int
	}
	changes := []change{{0, refill}}
	limit := func(endMS int64) int {
		n := 0
		for _, c := range changes {
			if c.from < endMS {
				n = c.size
			}
		}
		return n
	}

	stop := make(chan struct{})
	var bg sync.WaitGroup
	for i, s := range stores {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		period := interval/20 + time.Duration(r.Int64N(int64(interval/4)))
		wait := time.Duration(r.Int64N(int64(2 * interval))) // users may come before the first tick
		bg.Add(1)
		go func() {
			defer bg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(wait):
				}
				if _, err := s.Tick(ctx, q); err != nil {
					t.Error(err)
					return
				}
				wait = period
				if r.IntN(12) == 0 {
					wait = interval + time.Duration(r.Int64N(int64(3*interval/2)))
				}
			}
		}()
	}
	defer func() {
		close(stop)
		bg.Wait()
	}()

	var users []string
	paused := false
	openingEnds := int64(0)
	start, _ := redisPhase(t, rdb, interval)
	var log []string // the operator's part of the schedule, shown when the bound breaks
	for {
		now, _ := redisPhase(t, rdb, interval)
		if now-start > 40*interval.Milliseconds() {
			break
		}
		// Few enough arrivals that the line often drains between crowds,
		// so that some enter directly.
		time.Sleep(time.Duration(rng.Int64N(int64(interval / 2))))
		switch r := rng.Float64(); {
		case r < 0.1:
			u := "u" + strconv.Itoa(len(users))
			users = append(users, u)
			tk, err := pick().Enter(ctx, q, Entry{Caller: Caller{User: u}})
			if err != nil {
				t.Fatal(err)
			}
			if rng.IntN(3) > 0 {
				continue
			}
			// A crowd, half the time about when the next tick is due (just
			// before, or after but before a replica applies it).
			if rng.IntN(3) > 0 {
				time.Sleep(max(0, tk.UntilNextTick-interval/20+time.Duration(rng.Int64N(int64(interval/4)))))
			}
			for range 3*refill + rng.IntN(5*refill+1) {
				u := "u" + strconv.Itoa(len(users))
				users = append(users, u)
				if _, err := pick().Enter(ctx, q, Entry{Caller: Caller{User: u}}); err != nil {
					t.Fatal(err)
				}
			}
		case r < 0.27:
			if len(users) == 0 {
				continue
			}
			u := users[rng.IntN(len(users))]
			if status(t, pick(), q, u).Status == Waiting {
				if err := pick().Leave(ctx, q, Caller{User: u}); err != nil {
					t.Fatal(err)
				}
			}
		case r < 0.3:
			paused = !paused
			if err := NewInspector(pick()).UpdateSettings(ctx, q, Update{Paused: &paused}); err != nil {
				t.Fatal(err)
			}
			log = append(log, fmt.Sprintf("%d paused %v", now, paused))
		case r < 0.33:
			if refill == 4 {
				continue
			}
			refill++
			changes = append(changes, change{now, refill})
			if err := NewInspector(pick()).UpdateSettings(ctx, q, Update{RefillSize: ptr(refill)}); err != nil {
				t.Fatal(err)
			}
		case r < 0.35:
			if openingEnds > now {
				continue
			}
			nowT := time.UnixMilli(now)
			opens := nowT.Add(interval/2 + time.Duration(rng.Int64N(int64(2*interval))))
			if err := NewInspector(pick()).UpdateSettings(ctx, q, Update{OpensAt: &opens, PrequeueFrom: &nowT}); err != nil {
				t.Fatal(err)
			}
			openingEnds = opens.UnixMilli()
			log = append(log, fmt.Sprintf("%d opening at %d", now, openingEnds))
		}
	}

	// Resume, and let the tickers drain the line.
	resumed := false
	if err := NewInspector(stores[0]).UpdateSettings(ctx, q, Update{Paused: &resumed}); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 30*time.Second, "the line to drain", func() (bool, string) {
		in := info(t, stores[0], q)
		return in.Waiting == 0, fmt.Sprintf("%+v", in)
	})

	t.Logf("%d users", len(users))
	fullestWindows(t, admissionTimes(t, rdb, q), interval, limit)
	if t.Failed() {
		t.Logf("%d users; refill sizes %v; %v", len(users), changes, log)
	}
}
