package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// Places that never poll must not freeze the line. These tests
// put silent places at the head the way an attacker does: they join far
// from the head (behind places that then leave), so they hold no "heard"
// record when they reach it.

// names returns n user ids prefix0 .. prefix(n-1).
func names(prefix string, n int) []string {
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return users
}

// enterMany enters users in calls of 1000 and returns their tickets.
func enterMany(t *testing.T, s *Store, q string, users []string) []Ticket {
	t.Helper()
	var out []Ticket
	for i := 0; i < len(users); i += 1000 {
		out = append(out, runEnterCall(t, s, q, users[i:min(i+1000, len(users))]...)...)
	}
	return out
}

// farBack enters users behind cover placeholders that then leave, so the
// users reach the head with no heard record (they joined beyond
// near_head), and returns their tickets.
func farBack(t *testing.T, s *Store, q string, cover int, users []string) []Ticket {
	t.Helper()
	ctx := context.Background()
	front := names("cover", cover)
	enterMany(t, s, q, front)
	tickets := enterMany(t, s, q, users)
	for _, u := range front {
		if err := s.Leave(ctx, q, Caller{User: u}); err != nil {
			t.Fatal(err)
		}
	}
	return tickets
}

// heldCount is the number of places held aside (the held ZSET).
func heldCount(t *testing.T, rdb *redis.Client, q string) int64 {
	t.Helper()
	n, err := rdb.ZCard(context.Background(), keysFor(q).held).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// 1,100 silent places at the head, 200 people behind them who poll: every
// tick admits its whole budget until the people are all in (on the old
// code the ticks held the same silent places again and again and admitted
// nobody until abandon_after had passed).
func TestSilentHeadKeepsTheRate(t *testing.T) {
	t.Parallel()
	const refill, silent, people = 20, 1100, 200
	// near_head: 20 x 22 ticks = 440, well inside the 2,000 that cover them.
	// The ticks are forced, so the interval sets only near_head; abandon_after
	// is a minute of wall clock, which the run must stay within: at 10 s a
	// loaded machine took 30 s and the silent places were dropped, not held.
	s, q, rdb := newStore(t, Settings{RefillSize: refill, RefillInterval: 6 * time.Second, SessionTTL: time.Hour, AbandonAfter: time.Minute})
	tick(t, s, rdb, q)
	enterMany(t, s, q, names("in", refill)) // the bucket's
	farBack(t, s, q, 2000, append(names("bot", silent), names("p", people)...))
	admitted := 0
	for i := 0; admitted < people; i++ {
		if i > people/refill+2 {
			t.Fatalf("%d of %d people admitted after %d ticks", admitted, people, i)
		}
		for _, u := range names("p", people) {
			status(t, s, q, u) // they poll, and are heard
		}
		res := tick(t, s, rdb, q)
		if res.Moved != refill {
			t.Fatalf("tick %d admitted %d, budget %d, %d people still waiting (%d held)",
				i, res.Moved, refill, people-admitted, heldCount(t, rdb, q))
		}
		admitted += int(res.Moved)
	}
	if n := heldCount(t, rdb, q); n != silent {
		t.Errorf("%d places held, want the %d silent ones", n, silent)
	}
	// A held place is answered by Redis (not in the line, not gone yet).
	if st := status(t, s, q, "bot7"); st.Status != Waiting || st.Estimated {
		t.Errorf("a held place that asks: %+v", st)
	}
}

// person is a simulated page: it polls with its credential's arrival
// number, so far from the head the replica's snapshot answers it.
type person struct {
	user string
	seq  int64
}

// 30 people polling as their page does, through the far-back path, among
// 1,200 places that never poll: all 30 are admitted, none dropped (on the
// old code all 30 were dropped with the bots: with 1,000 held ahead their
// status was answered from the snapshot, so they never confirmed).
func TestPeopleAmongSilentPlacesAreAdmitted(t *testing.T) {
	t.Parallel()
	const refill, bots, people = 20, 1200, 30
	const abandon = 5 * time.Second
	s, q, rdb := newStore(t, Settings{RefillSize: refill, RefillInterval: time.Second, SessionTTL: time.Hour, AbandonAfter: abandon})
	ctx := context.Background()
	tick(t, s, rdb, q)
	enterMany(t, s, q, names("in", refill))
	// The people at random places among the bots (fixed seed).
	rng := rand.New(rand.NewPCG(26, 1))
	line := append(names("bot", bots), names("p", people)...)
	rng.Shuffle(len(line), func(i, j int) { line[i], line[j] = line[j], line[i] })
	tickets := farBack(t, s, q, 2000, line)
	var crowd []person
	for i, u := range line {
		if u[0] == 'p' {
			crowd = append(crowd, person{u, tickets[i].Seq})
		}
	}
	if err := s.RefreshSnapshot(ctx, q, true); err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	deadline := time.Now().Add(4 * abandon)
	for len(in) < people {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d people admitted by the deadline", len(in), people)
		}
		for _, p := range crowd {
			if in[p.user] {
				continue
			}
			got, err := s.Status(ctx, q, Caller{User: p.user, Proved: true, Seq: p.seq})
			if err != nil {
				t.Fatal(err)
			}
			switch got.Status {
			case Entered:
				in[p.user] = true
			case NotWaiting:
				t.Fatalf("%s, polling, lost its place: %+v (%d admitted)", p.user, got, len(in))
			}
		}
		res := tick(t, s, rdb, q)
		if err := s.RefreshSnapshot(ctx, q, res.Applied); err != nil {
			t.Fatal(err)
		}
	}
}

// A silent place at the head is held aside and the people behind it go in;
// when it asks (late), it is back at its arrival number, ahead of all, and
// the next tick admits it: late, not lost. One that never asks is dropped,
// abandoned, once its deadline passes.
func TestHeldPlaceLateNotLost(t *testing.T) {
	t.Parallel()
	const abandon = 400 * time.Millisecond
	s, q, rdb := newStore(t, Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour, AbandonAfter: abandon})
	tick(t, s, rdb, q)
	enterMany(t, s, q, names("in", 2))
	farBack(t, s, q, 50, []string{"late", "never"})
	enterMany(t, s, q, []string{"b", "c", "d"})
	for _, u := range []string{"b", "c", "d"} {
		status(t, s, q, u)
	}
	res := tick(t, s, rdb, q)
	if res.Moved != 2 || heldCount(t, rdb, q) != 2 {
		t.Fatalf("tick %+v, %d held: want b and c in, late and never held", res, heldCount(t, rdb, q))
	}
	for u, want := range map[string]Status{"b": Entered, "c": Entered} {
		if st := status(t, s, q, u); st.Status != want {
			t.Fatalf("%s: %+v", u, st)
		}
	}
	// late asks: back at the head, ahead of d who arrived after it.
	if st := status(t, s, q, "late"); st.Status != Waiting || st.Position != 1 {
		t.Fatalf("late, confirming: %+v", st)
	}
	status(t, s, q, "d")
	res = tick(t, s, rdb, q)
	if res.Moved != 2 {
		t.Fatalf("tick %+v: want late and d", res)
	}
	if st := status(t, s, q, "late"); st.Status != Entered {
		t.Fatalf("late: %+v", st)
	}
	// never: dropped once its deadline passed (ticks until it is).
	wait.For(t, 10*abandon, "the held place to be dropped", func() (bool, string) {
		if n := heldCount(t, rdb, q); n > 0 {
			tick(t, s, rdb, q)
			return false, fmt.Sprintf("%d held", n)
		}
		return true, ""
	})
	if st := status(t, s, q, "never"); st.Status != NotWaiting || st.Reason != ReasonAbandoned {
		t.Fatalf("never: %+v", st)
	}
}

// A tick holds at most holdBatch places aside, and drops at most
// abandonBatch: with more silent places than that at the head, the next
// tick goes on where it stopped, and the person behind them goes in.
func TestHeldPerTickBounded(t *testing.T) {
	t.Parallel()
	const silent = holdBatch + 2000
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, AbandonAfter: time.Minute})
	tick(t, s, rdb, q)
	enter(t, s, q, "in")
	farBack(t, s, q, 50, names("s", silent))
	enter(t, s, q, "present")
	prev := int64(0)
	for i := 0; ; i++ {
		if i > 3 {
			t.Fatal("present never admitted")
		}
		status(t, s, q, "present")
		res := tick(t, s, rdb, q)
		n := heldCount(t, rdb, q)
		if n-prev > holdBatch {
			t.Fatalf("tick %d held %d places, bound %d", i, n-prev, holdBatch)
		}
		prev = n
		if res.Moved == 1 {
			break
		}
	}
	if st := status(t, s, q, "present"); st.Status != Entered || prev != silent {
		t.Fatalf("present %+v, %d held", st, prev)
	}
}

// Many people confirm while ticks run from several replicas: each held
// place that confirms is admitted exactly once, no admission exceeds the
// budget, and nobody polling is dropped.
func TestHeldConfirmsRaceTicks(t *testing.T) {
	t.Parallel()
	const refill, silent, people = 10, 300, 100
	settings := Settings{RefillSize: refill, RefillInterval: time.Second, SessionTTL: time.Hour, AbandonAfter: 10 * time.Second}
	s, q, rdb := newStore(t, settings) // near_head 220, inside the 300 that cover them
	other, err := NewStore(rdb, []string{q}, settings, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tick(t, s, rdb, q)
	enterMany(t, s, q, names("in", refill))
	farBack(t, s, q, 300, append(names("p", people), names("s", silent)...))
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	moved := int64(0)
	lost := []string{}
	stop := make(chan struct{})
	// The ticks and the people stop before the test ends, when it fails
	// too.
	stopAll := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopAll()
	for w, st := range []*Store{s, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = rdb.HDel(ctx, keysFor(q).tick, "next_at_ms").Err()
				res, err := st.Tick(ctx, q)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Moved > refill {
					t.Errorf("replica %d: a tick moved %d, budget %d", w, res.Moved, refill)
				}
				mu.Lock()
				moved += res.Moved
				mu.Unlock()
			}
		}()
	}
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := i; j < people; j += 8 {
				u := fmt.Sprintf("p%d", j)
				for {
					select {
					case <-stop:
						return
					default:
					}
					tk, err := other.Status(ctx, q, Caller{User: u})
					if err != nil {
						t.Error(err)
						return
					}
					if tk.Status == Entered {
						break
					}
					if tk.Status == NotWaiting {
						mu.Lock()
						lost = append(lost, u)
						mu.Unlock()
						break
					}
				}
			}
		}()
	}
	wait.For(t, 60*time.Second, "every person moved in", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return moved >= people, fmt.Sprintf("%d of %d moved, lost %v", moved, people, lost)
	})
	stopAll()
	entered, err := rdb.ZCard(ctx, keysFor(q).entered).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) > 0 || moved != people || entered != refill+people {
		t.Fatalf("moved %d, %d entered in all, lost %v; want %d people moved", moved, entered, lost, people)
	}
}

// Every dropped place says why, however many one call drops (mark_gone
// flushes every 500: the old code then indexed a fresh table from 1001
// and lost the reasons after the first 500).
func TestEveryReasonKept(t *testing.T) {
	t.Parallel()
	const n = purgeBatch // the most one tick purges
	s, q, rdb := newStore(t, Settings{RefillSize: n, RefillInterval: time.Hour, SessionTTL: 300 * time.Millisecond})
	tick(t, s, rdb, q)
	users := names("x", n)
	for _, tk := range enterMany(t, s, q, users) {
		if tk.Status != Entered {
			t.Fatalf("not admitted: %+v", tk)
		}
	}
	wait.For(t, time.Minute, "the admissions to expire", func() (bool, string) {
		st := status(t, s, q, users[n-1])
		return st.Status == NotWaiting, fmt.Sprint(st.Status)
	})
	if res := tick(t, s, rdb, q); res.Purged != n {
		t.Fatalf("tick purged %d, want %d", res.Purged, n)
	}
	lost := 0
	for _, tk := range runStatusCall(t, s, q, users...) {
		if tk.Reason != ReasonExpired {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d purged places have no reason", lost, n)
	}
}
