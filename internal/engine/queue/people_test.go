package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// The price falls on bots, never on a crowd that shares a network: these
// tests hold what a person pays (the ceiling, an account, a shared
// network's addresses, a human check) and what a network cannot park.

// asPricing is c with its pricing set.
func asPricing(c Caller, p Pricing) Caller {
	c.Pricing = p
	return c
}

// No place costs more than the ceiling, whatever its network holds or the
// queue's own challenge_difficulty: the 30th place of one /24 asks 17
// bits, where the curve alone would ask 22.
func TestCeilingCapsEveryPrice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Price: Price{Bits: 13}})
	enter(t, s, q, "first")
	highest := 0
	for n := range 30 {
		c := callerAt(fmt.Sprintf("p%d", n), fmt.Sprintf("192.0.2.%d", n+1))
		d, err := s.Challenge(ctx, q, c)
		if err != nil {
			t.Fatal(err)
		}
		if want := min(PriceDifficulty(13, n, 0), DefaultMaxBits); d != want {
			t.Fatalf("place %d: %d bits, want %d", n+1, d, want)
		}
		highest = max(highest, d)
		c.Proof = proofAt(d)
		if _, err := s.Enter(ctx, q, Entry{Caller: c}); err != nil {
			t.Fatalf("place %d with a proof of %d: %v", n+1, d, err)
		}
	}
	if highest != DefaultMaxBits || PriceDifficulty(13, 29, 0) <= DefaultMaxBits {
		t.Fatalf("highest %d bits; the curve's %d should pass the ceiling %d", highest, PriceDifficulty(13, 29, 0), DefaultMaxBits)
	}
	// The queue's own difficulty is capped too.
	hard := 25
	setUpdate(t, s, q, Update{ChallengeDifficulty: &hard})
	if d, err := s.Challenge(ctx, q, callerAt("", "198.51.100.1")); err != nil || d != DefaultMaxBits {
		t.Fatalf("challenge_difficulty 25: %d, %v, want the ceiling %d", d, err, DefaultMaxBits)
	}
}

// A signed-in member is one person: 18 members behind one /24 pay
// nothing, each, and leave no count behind for the network's people.
func TestAccountsPayNoNetworkPrice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Price: Price{Bits: 13}})
	enter(t, s, q, "first")
	for n := range 18 {
		c := asPricing(callerAt(fmt.Sprintf("member%d", n), fmt.Sprintf("192.0.2.%d", n+1)), PriceNone)
		if d, err := s.Challenge(ctx, q, c); err != nil || d != 0 {
			t.Fatalf("member %d: %d bits, %v; want none", n+1, d, err)
		}
		if tk, err := s.Enter(ctx, q, Entry{Caller: c}); err != nil || tk.Status != Waiting {
			t.Fatalf("member %d: %+v, %v", n+1, tk, err)
		}
	}
	// The network's first anonymous place is still its first.
	if d, err := s.Challenge(ctx, q, callerAt("", "192.0.2.200")); err != nil || d != 0 {
		t.Fatalf("the /24's first anonymous place after 18 members: %d, %v; want 0", d, err)
	}
	if keys, err := rdb.Keys(ctx, rediskeys.NetPlaces(q, "*")).Result(); err != nil || len(keys) != 0 {
		t.Fatalf("members made network counts: %v, %v", keys, err)
	}
}

// A network of the hosting class pays the ceiling for every place, its
// first included.
func TestHostingPaysTheCeiling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Price: Price{Bits: 13}})
	enter(t, s, q, "first")
	c := asPricing(callerAt("dc", "203.0.113.9"), PriceCeiling)
	if d, err := s.Challenge(ctx, q, c); err != nil || d != DefaultMaxBits {
		t.Fatalf("a hosting network's first place: %d, %v; want %d", d, err, DefaultMaxBits)
	}
	c.Proof = proofAt(DefaultMaxBits - 1)
	var ce *ChallengeError
	if _, err := s.Enter(ctx, q, Entry{Caller: c}); !errors.As(err, &ce) || ce.Difficulty != DefaultMaxBits {
		t.Fatalf("a proof under the ceiling: %v", err)
	}
	c.Proof = proofAt(DefaultMaxBits)
	if tk, err := s.Enter(ctx, q, Entry{Caller: c}); err != nil || tk.Status != Waiting {
		t.Fatalf("a proof at the ceiling: %+v, %v", tk, err)
	}
}

// The human check: escalate asks it of a network past its free place and
// of hosting, always of everyone; one who passed it pays no proof of
// work; while the provider is away, proof of work at the ceiling instead.
func TestHumanCheckModes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	avail := true
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Price: Price{Bits: 13}},
		WithHumanCheck(func() bool { return avail }))
	enter(t, s, q, "first")
	mode := HumanEscalate
	setUpdate(t, s, q, Update{HumanCheck: &mode})
	// The first place of a network: free, no check.
	if tk, err := s.Enter(ctx, q, Entry{Caller: callerAt("a1", "192.0.2.1")}); err != nil || tk.Status != Waiting {
		t.Fatalf("first place: %+v, %v", tk, err)
	}
	// Its second: the check, and its challenge says so too.
	second := callerAt("a2", "192.0.2.2")
	if _, err := s.Enter(ctx, q, Entry{Caller: second}); !errors.Is(err, ErrHumanCheckRequired) {
		t.Fatalf("second place: %v, want ErrHumanCheckRequired", err)
	}
	if _, err := s.Challenge(ctx, q, second); !errors.Is(err, ErrHumanCheckRequired) {
		t.Fatalf("second place's challenge: %v, want ErrHumanCheckRequired", err)
	}
	// A proof of work does not replace it while the provider answers.
	second.Proof = proofAt(32)
	if _, err := s.Enter(ctx, q, Entry{Caller: second}); !errors.Is(err, ErrHumanCheckRequired) {
		t.Fatalf("second place with a proof: %v, want ErrHumanCheckRequired", err)
	}
	second.Proof, second.Human = Proof{}, true
	if tk, err := s.Enter(ctx, q, Entry{Caller: second}); err != nil || tk.Status != Waiting {
		t.Fatalf("second place, checked: %+v, %v", tk, err)
	}
	// Hosting: asked from the first place.
	if _, err := s.Enter(ctx, q, Entry{Caller: asPricing(callerAt("dc", "203.0.113.1"), PriceCeiling)}); !errors.Is(err, ErrHumanCheckRequired) {
		t.Fatalf("hosting: %v, want ErrHumanCheckRequired", err)
	}
	// A member: nothing.
	if _, err := s.Enter(ctx, q, Entry{Caller: asPricing(callerAt("m", "192.0.2.3"), PriceNone)}); err != nil {
		t.Fatalf("member: %v", err)
	}
	// The provider away: proof of work at the ceiling, never open.
	avail = false
	var ce *ChallengeError
	if _, err := s.Enter(ctx, q, Entry{Caller: callerAt("a3", "192.0.2.4")}); !errors.As(err, &ce) || ce.Difficulty != DefaultMaxBits {
		t.Fatalf("provider away: %v, want a challenge at %d", err, DefaultMaxBits)
	}
	avail = true
	// always: everyone, members and first places too.
	mode = HumanAlways
	setUpdate(t, s, q, Update{HumanCheck: &mode})
	for _, c := range []Caller{callerAt("b1", "198.51.100.1"), asPricing(callerAt("m2", "198.51.100.2"), PriceNone)} {
		if _, err := s.Enter(ctx, q, Entry{Caller: c}); !errors.Is(err, ErrHumanCheckRequired) {
			t.Fatalf("always, %s: %v", c.User, err)
		}
		c.Human = true
		if _, err := s.Enter(ctx, q, Entry{Caller: c}); err != nil {
			t.Fatalf("always, %s checked: %v", c.User, err)
		}
	}
	bad := "sometimes"
	if err := NewInspector(s).UpdateSettings(ctx, q, Update{HumanCheck: &bad}); err == nil {
		t.Fatal("human_check \"sometimes\" accepted")
	}
}

// Places set aside as held still count in their network's price and in
// the line's cap until they are admitted or dropped: a /24 whose eight
// silent places were held used to find its next place priced as a first.
func TestHeldPlacesStillCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour, AbandonAfter: time.Hour,
		Price: Price{Bits: 13, MaxBits: MaxChallengeDifficulty}})
	tick(t, s, rdb, q)
	enterMany(t, s, q, names("in", 2)) // the interval's tokens
	cover := names("cover", 50)
	enterMany(t, s, q, cover)
	const bots = 8
	for n := range bots {
		c := callerAt(fmt.Sprintf("bot%d", n), fmt.Sprintf("192.0.2.%d", n+1))
		c.Proof = proofAt(MaxChallengeDifficulty)
		if _, err := s.Enter(ctx, q, Entry{Caller: c}); err != nil {
			t.Fatal(err)
		}
	}
	enterMany(t, s, q, []string{"p1", "p2"})
	for _, u := range cover {
		if err := s.Leave(ctx, q, Caller{User: u}); err != nil {
			t.Fatal(err)
		}
	}
	status(t, s, q, "p1")
	status(t, s, q, "p2")
	if res := tick(t, s, rdb, q); res.Moved != 2 || heldCount(t, rdb, q) != bots {
		t.Fatalf("tick %+v, %d held: want p1 and p2 in, the bots held", res, heldCount(t, rdb, q))
	}
	want := PriceDifficulty(13, bots, 0)
	if d, err := s.Challenge(ctx, q, callerAt("", "192.0.2.100")); err != nil || d != want {
		t.Fatalf("the /24 with %d held places: %d bits, %v; want %d", bots, d, err, want)
	}
	// The cap: 8 held and nobody in line, max_waiting 9: one more only.
	capN := bots + 1
	setUpdate(t, s, q, Update{MaxWaiting: &capN})
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "n1"}}); err != nil {
		t.Fatalf("first newcomer: %v", err)
	}
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "n2"}}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("second newcomer with 8 held and 1 waiting, cap 9: %v, want ErrQueueFull", err)
	}
}

// Calls of one network in one batch, the first refused and the next let
// through, record the network once: the second reuses what the first
// read (a regression guard for the batch's shared view of the filter).
func TestSeenFilterOneNetworkInABatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Price: Price{Bits: 13}})
	enter(t, s, q, "first")
	if _, err := s.Enter(ctx, q, Entry{Caller: callerAt("a0", "192.0.2.1")}); err != nil {
		t.Fatal(err)
	}
	// Many concurrent enters of the /24, half without the proof its next
	// place costs: those are refused, the others pay and get in.
	var wg sync.WaitGroup
	var in, refused atomic.Int32
	for i := range 20 {
		wg.Go(func() {
			c := callerAt(fmt.Sprintf("b%d", i), fmt.Sprintf("192.0.2.%d", 10+i))
			if i%2 == 1 {
				c.Proof = proofAt(DefaultMaxBits)
			}
			_, err := s.Enter(ctx, q, Entry{Caller: c})
			var ce *ChallengeError
			switch {
			case err == nil:
				in.Add(1)
			case errors.As(err, &ce):
				refused.Add(1)
			default:
				t.Errorf("b%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if in.Load()+refused.Load() != 20 || refused.Load() < 10 {
		t.Fatalf("%d in, %d refused: want the 10 without a proof refused, and no error", in.Load(), refused.Load())
	}
}
