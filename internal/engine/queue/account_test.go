package queue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// join enters account sub's place in lane's line as a site's join token
// does (Store.Enter with Join).
func join(ctx context.Context, s *Store, q, lane, sub string) (Ticket, error) {
	return s.Enter(ctx, q, Entry{Caller: Caller{User: AccountMember(lane, sub)}, Join: true})
}

// wantOtherLine fails unless err refuses an enter for a place in lane's
// line.
func wantOtherLine(t *testing.T, err error, lane string) {
	t.Helper()
	var o *OtherLineError
	if !errors.Is(err, ErrPlaceInOtherLine) || !errors.As(err, &o) || o.Lane != lane {
		t.Fatalf("got %v, want ErrPlaceInOtherLine naming lane %q", err, lane)
	}
}

// linesHolding are the lines ("": the general lane) of lanes in which
// account sub holds a place: waiting, held, in a draw, or admitted and
// active.
func linesHolding(t *testing.T, rdb *redis.Client, q string, lanes []string, sub string, ttl time.Duration) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	now := time.Now().UnixMilli()
	for _, lane := range append([]string{""}, lanes...) {
		k, m := keysForLine(q, lane), AccountMember(lane, sub)
		in := rdb.ZScore(ctx, k.waiting, m).Err() == nil || rdb.ZScore(ctx, k.held, m).Err() == nil ||
			rdb.SIsMember(ctx, k.draw, m).Val()
		if at, err := rdb.ZScore(ctx, k.entered, m).Result(); err == nil && int64(at) > now-ttl.Milliseconds() {
			in = true
		}
		if in {
			out = append(out, lane)
		}
	}
	return out
}

// One account holds one place per queue: with a place in one line (the
// general lane's or a lane's), its enter in another is refused and
// changes nothing there; in its own line it enters again as ever.
func TestAccountOnePlaceAcrossLines(t *testing.T) {
	ctx := context.Background()
	settings := Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}
	newQueue := func(t *testing.T) (*Store, string, *redis.Client) {
		s, q, rdb := newStore(t, settings)
		setLanes(t, s, q, Lanes{{Name: "priority", Share: 0.3}, {Name: "vip", Share: 0.2}})
		enter(t, s, q, "u:first") // takes the token: everyone after waits
		return s, q, rdb
	}
	for _, tc := range []struct{ first, second string }{
		{"", "priority"}, {"priority", ""}, {"priority", "vip"}, {"vip", "priority"},
	} {
		name := func(l string) string {
			if l == "" {
				return "general"
			}
			return l
		}
		t.Run(name(tc.first)+"-then-"+name(tc.second), func(t *testing.T) {
			s, q, rdb := newQueue(t)
			if tk, err := join(ctx, s, q, tc.first, "carol"); err != nil || tk.Status != Waiting {
				t.Fatalf("first: %+v, %v", tk, err)
			}
			k := keysForLine(q, tc.second)
			seq := rdb.Get(ctx, k.seq).Val()
			_, err := join(ctx, s, q, tc.second, "carol")
			wantOtherLine(t, err, tc.first)
			if n := rdb.ZCard(ctx, k.waiting).Val(); n != 0 || rdb.Get(ctx, k.seq).Val() != seq {
				t.Fatalf("the refused line changed: %d waiting, seq %q (was %q)", n, rdb.Get(ctx, k.seq).Val(), seq)
			}
			if st := status(t, s, q, AccountMember(tc.first, "carol")); st.Status != Waiting || st.Position != 1 {
				t.Fatalf("the place held: %+v", st)
			}
			// Entering again in its own line is the usual re-entry.
			if tk, err := join(ctx, s, q, tc.first, "carol"); err != nil || tk.Status != Waiting {
				t.Fatalf("again in its own line: %+v, %v", tk, err)
			}
			if tk, err := s.Enter(ctx, q, Entry{Caller: Caller{User: AccountMember(tc.first, "carol"), Account: "carol"}}); err != nil || tk.Status != Waiting {
				t.Fatalf("enter again in its own line: %+v, %v", tk, err)
			}
			// Someone else's account is not concerned.
			if tk, err := join(ctx, s, q, tc.second, "dave"); err != nil || tk.Status != Waiting {
				t.Fatalf("another account: %+v, %v", tk, err)
			}
			// Once the place is given up, the other line takes the account.
			if err := s.Leave(ctx, q, Caller{User: AccountMember(tc.first, "carol")}); err != nil {
				t.Fatal(err)
			}
			if tk, err := join(ctx, s, q, tc.second, "carol"); err != nil || tk.Status != Waiting {
				t.Fatalf("after leaving: %+v, %v", tk, err)
			}
		})
	}

	// Set aside at the head (held) or in a scheduled opening's draw, the
	// place is the account's as much as one waiting.
	for _, where := range []string{"held", "draw"} {
		t.Run(where, func(t *testing.T) {
			s, q, rdb := newQueue(t)
			k := keysForLine(q, "priority")
			var err error
			if where == "held" {
				err = rdb.ZAdd(ctx, k.held, redis.Z{Score: 1, Member: AccountMember("priority", "carol")}).Err()
			} else {
				err = rdb.SAdd(ctx, k.draw, AccountMember("priority", "carol")).Err()
			}
			if err == nil {
				err = rdb.SAdd(ctx, k.lanes, "priority").Err()
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = join(ctx, s, q, "", "carol")
			wantOtherLine(t, err, "priority")
		})
	}
}

// An admitted account is refused a place in another line while its
// admission is active, and takes one once the admission has ended.
func TestAccountAdmittedElsewhere(t *testing.T) {
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 5, RefillInterval: time.Hour, SessionTTL: time.Hour})
	setLanes(t, s, q, Lanes{{Name: "priority", Share: 0.3}})
	if tk, err := join(ctx, s, q, "", "carol"); err != nil || tk.Status != Entered {
		t.Fatalf("general: %+v, %v", tk, err)
	}
	_, err := join(ctx, s, q, "priority", "carol")
	wantOtherLine(t, err, "")
	if tk, err := join(ctx, s, q, "priority", "erin"); err != nil || tk.Status != Entered {
		t.Fatalf("erin, in the lane: %+v, %v", tk, err)
	}
	_, err = join(ctx, s, q, "", "erin")
	wantOtherLine(t, err, "priority")

	// The admission ran out (not purged yet: the tick has not run).
	if err := rdb.ZAdd(ctx, keysFor(q).entered, redis.Z{Score: float64(time.Now().Add(-2 * time.Hour).UnixMilli()), Member: "u:carol"}).Err(); err != nil {
		t.Fatal(err)
	}
	if tk, err := join(ctx, s, q, "priority", "carol"); err != nil || tk.Status == NotWaiting {
		t.Fatalf("after the admission ended: %+v, %v", tk, err)
	}
}

// A lane this replica has not seen yet (configured since it last read
// the lanes) is looked in all the same: the script sees the lanes SET,
// and the store reads the lanes again.
func TestAccountLaneNotSeenYet(t *testing.T) {
	ctx := context.Background()
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
	setLanes(t, s, q, Lanes{{Name: "priority", Share: 0.3}})
	enter(t, s, q, "u:first")
	if _, err := join(ctx, s, q, "", "dave"); err != nil { // this replica reads the lanes: priority
		t.Fatal(err)
	}
	other, _, _ := newStoreFor(t, s, q) // another replica adds a lane and a place in it
	setLanes(t, other, q, Lanes{{Name: "priority", Share: 0.3}, {Name: "vip", Share: 0.2}})
	if tk, err := join(ctx, other, q, "vip", "carol"); err != nil || tk.Status != Waiting {
		t.Fatalf("vip: %+v, %v", tk, err)
	}
	_, err := join(ctx, s, q, "", "carol")
	wantOtherLine(t, err, "vip")
}

// newStoreFor is another replica's store of s's queue q.
func newStoreFor(t *testing.T, s *Store, q string) (*Store, string, Redis) {
	t.Helper()
	r, err := NewStore(s.rdb, []string{q}, s.defaults, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return r, q, s.rdb
}

// Over generated accounts, lanes and orders of enters, leaves and ticks,
// no account ever holds places in two lines.
func TestAccountPropertyOneLine(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	ctx := context.Background()
	for trial := range 6 {
		ttl := time.Hour
		s, q, rdb := newStore(t, Settings{RefillSize: 1 + rng.IntN(3), RefillInterval: time.Hour, SessionTTL: ttl})
		var lanes []string
		var ls Lanes
		for i := range 1 + rng.IntN(3) {
			lanes = append(lanes, fmt.Sprintf("l%d", i))
			ls = append(ls, Lane{Name: lanes[i], Share: 0.2})
		}
		setLanes(t, s, q, ls)
		accounts := 2 + rng.IntN(4)
		lines := append([]string{""}, lanes...)
		for step := range 80 {
			sub := fmt.Sprintf("a%d", rng.IntN(accounts))
			lane := lines[rng.IntN(len(lines))]
			switch r := rng.IntN(10); {
			case r < 7:
				if _, err := join(ctx, s, q, lane, sub); err != nil && !errors.Is(err, ErrPlaceInOtherLine) {
					t.Fatalf("trial %d step %d: join %s in %q: %v", trial, step, sub, lane, err)
				}
			case r < 9:
				if err := s.Leave(ctx, q, Caller{User: AccountMember(lane, sub)}); err != nil {
					t.Fatal(err)
				}
			default:
				tick(t, s, rdb, q)
			}
			for a := range accounts {
				if in := linesHolding(t, rdb, q, lanes, fmt.Sprintf("a%d", a), ttl); len(in) > 1 {
					t.Fatalf("trial %d step %d: account a%d holds places in the lines %q", trial, step, a, in)
				}
			}
		}
	}
}

// The same account entering two lines at once, from many goroutines (and
// two replicas): at most one line holds it, and every enter is either
// through or refused with ErrPlaceInOtherLine.
func TestAccountConcurrentLines(t *testing.T) {
	ctx := context.Background()
	ttl := time.Hour
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: ttl})
	setLanes(t, s, q, Lanes{{Name: "priority", Share: 0.3}})
	other, _, _ := newStoreFor(t, s, q)
	enter(t, s, q, "u:first")
	const accounts, perLine = 8, 12
	var wg sync.WaitGroup
	errs := make(chan error, accounts*perLine*2)
	for a := range accounts {
		sub := fmt.Sprintf("racer%d", a)
		for i := range perLine * 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lane, st := "", s
				if i%2 == 1 {
					lane = "priority"
				}
				if i%4 >= 2 {
					st = other
				}
				if _, err := join(ctx, st, q, lane, sub); err != nil && !errors.Is(err, ErrPlaceInOtherLine) {
					errs <- err
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for a := range accounts {
		if in := linesHolding(t, rdb, q, []string{"priority"}, fmt.Sprintf("racer%d", a), ttl); len(in) != 1 {
			t.Fatalf("racer%d holds places in the lines %q, want exactly one", a, in)
		}
	}
}
