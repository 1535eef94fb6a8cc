package queue

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// heldLine is a line whose head is the held places of bots (joined far
// back, never heard, set aside by a tick), then people who poll: one
// admitted a tick, held places coming back two a tick per network.
// Returns each bot's arrival number.
func heldLine(t *testing.T, bots, people []string) (*Store, string, *redis.Client, map[string]float64) {
	t.Helper()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, AbandonAfter: time.Hour,
		Limits: Limits{HeldReturnPerTick: 2}})
	tick(t, s, rdb, q)
	enter(t, s, q, "in") // the bucket's
	farBack(t, s, q, 100, append(append([]string{}, bots...), append([]string{"first"}, people...)...))
	status(t, s, q, "first")
	for _, u := range people {
		status(t, s, q, u)
	}
	tick(t, s, rdb, q) // holds the bots, admits "first"
	if n := heldCount(t, rdb, q); n != int64(len(bots)) {
		t.Fatalf("%d held, want %d", n, len(bots))
	}
	seqs := map[string]float64{}
	for _, b := range bots {
		v, err := rdb.ZScore(context.Background(), keysFor(q).held, b).Result()
		if err != nil {
			t.Fatal(err)
		}
		seqs[b] = v
	}
	return s, q, rdb, seqs
}

// asks makes the calls at once (goroutines racing) and returns the answers.
func asks(t *testing.T, s *Store, q string, calls []Caller) []Ticket {
	t.Helper()
	out := make([]Ticket, len(calls))
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = s.Status(context.Background(), q, c)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", calls[i].User, err)
		}
	}
	return out
}

func fromNetwork(users []string, network, address string) []Caller {
	calls := make([]Caller, len(users))
	for i, u := range users {
		calls[i] = Caller{User: u, Client: address, Networks: [2]string{network}}
	}
	return calls
}

func positions(t *testing.T, s *Store, q string, users []string) map[string]int64 {
	t.Helper()
	p := map[string]int64{}
	for _, u := range users {
		st := status(t, s, q, u)
		if st.Status != Waiting {
			t.Fatalf("%s: %+v", u, st)
		}
		p[u] = st.Position
	}
	return p
}

// 48 held places of one network ask at once: at most 2 come back a
// tick, the rest stay held (answered WAITING where they would stand) and
// come back on later ticks' asks at their own arrival numbers; the 20
// people who polled all along are pushed back by at most 2 a tick. Held
// places of another network come back as its own budget allows, whatever
// the first used.
func TestHeldPlacesReturnFewPerNetworkPerTick(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bots, people, others := names("bot", 48), names("p", 20), names("other", 2)
	s, q, rdb, seqs := heldLine(t, append(append([]string{}, bots...), others...), people)
	back := map[string]bool{}
	for round := 0; len(back) < len(bots); round++ {
		if round > len(bots) {
			t.Fatalf("%d of %d bots back after %d ticks", len(back), len(bots), round)
		}
		before := positions(t, s, q, people)
		var asking []string
		for _, b := range bots {
			if !back[b] {
				asking = append(asking, b)
			}
		}
		answers := asks(t, s, q, fromNetwork(asking, "198.51.100.0/24", "198.51.100.7"))
		returned := 0
		for i, b := range asking {
			if answers[i].Status != Waiting || answers[i].Position < 1 || answers[i].Seq != int64(seqs[b]) {
				t.Fatalf("round %d, %s: %+v, want WAITING at arrival %v", round, b, answers[i], seqs[b])
			}
			score, err := rdb.ZScore(ctx, keysFor(q).waiting, b).Result()
			if err == nil {
				if score != seqs[b] {
					t.Fatalf("%s back at %v, its arrival %v", b, score, seqs[b])
				}
				returned++
				back[b] = true
			} else if err != redis.Nil {
				t.Fatal(err)
			}
		}
		if want := min(2, len(asking)); returned != want {
			t.Fatalf("round %d: %d of %d held places back, want %d", round, returned, len(asking), want)
		}
		if round == 0 {
			// Another network's two held places: both back at once.
			for i, a := range asks(t, s, q, fromNetwork(others, "203.0.113.0/24", "203.0.113.9")) {
				if a.Status != Waiting {
					t.Fatalf("%s: %+v", others[i], a)
				}
			}
			if n := heldCount(t, rdb, q); n != int64(len(bots)-2) {
				t.Fatalf("%d held after the other network asked, want %d", n, len(bots)-2)
			}
		}
		after := positions(t, s, q, people)
		for _, p := range people {
			if pushed := after[p] - before[p]; pushed > 2 && !(round == 0 && pushed <= 2+int64(len(others))) {
				t.Fatalf("round %d: %s pushed back %d places", round, p, pushed)
			}
		}
		tick(t, s, rdb, q) // a new interval: admits the head
	}
	if n := heldCount(t, rdb, q); n != 0 {
		t.Fatalf("%d still held", n)
	}
}

// With no limit (0), every held place that asks comes back at once.
func TestHeldReturnUnlimited(t *testing.T) {
	t.Parallel()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, AbandonAfter: time.Hour})
	tick(t, s, rdb, q)
	enter(t, s, q, "in")
	bots := names("bot", 10)
	farBack(t, s, q, 100, append(append([]string{}, bots...), "first"))
	status(t, s, q, "first")
	tick(t, s, rdb, q)
	if n := heldCount(t, rdb, q); n != 10 {
		t.Fatalf("%d held", n)
	}
	asks(t, s, q, fromNetwork(bots, "198.51.100.0/24", "198.51.100.7"))
	if n := heldCount(t, rdb, q); n != 0 {
		t.Fatalf("%d still held", n)
	}
}

// A held place asking beyond its network's budget was heard: it stays
// held with a new deadline, so the tick does not drop it when the old one
// passes, and it comes back on a later ask at its own arrival number.
func TestHeldBeyondBudgetKeepsItsPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bots := names("bot", 3)
	s, q, rdb, seqs := heldLine(t, bots, names("p", 2))
	// Every deadline to confirm is due in 200 ms (the Redis clock).
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	due := now.Add(200 * time.Millisecond)
	for _, b := range bots {
		if err := rdb.ZAdd(ctx, keysFor(q).heard, redis.Z{Score: float64(-due.UnixMilli()), Member: b}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range fromNetwork(bots, "198.51.100.0/24", "198.51.100.7") {
		if st, err := s.Status(ctx, q, c); err != nil || st.Status != Waiting || st.Seq != int64(seqs[c.User]) {
			t.Fatalf("%s: %+v, %v", c.User, st, err)
		}
	}
	if n := heldCount(t, rdb, q); n != 1 {
		t.Fatalf("%d held, want the third bot", n)
	}
	wait.For(t, 10*time.Second, "the Redis clock past the old deadline", func() (bool, string) {
		tm, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return tm.After(due.Add(10 * time.Millisecond)), fmt.Sprintf("%v before it", due.Sub(tm))
	})
	if res := tick(t, s, rdb, q); res.Abandoned != 0 {
		t.Fatalf("the tick after the old deadline dropped %d", res.Abandoned)
	}
	st, err := s.Status(ctx, q, fromNetwork(bots[2:], "198.51.100.0/24", "198.51.100.7")[0])
	if err != nil || st.Status != Waiting {
		t.Fatalf("bot2 on a later ask: %+v, %v", st, err)
	}
	if score, err := rdb.ZScore(ctx, keysFor(q).waiting, "bot2").Result(); err != nil || score != seqs["bot2"] {
		t.Fatalf("bot2 in line at %v (%v), its arrival %v", score, err, seqs["bot2"])
	}
}
