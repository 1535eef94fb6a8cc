package queue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// callerAt is a caller from address a, named by its tiers as the API
// names it (clientip.TiersOf).
func callerAt(user, a string) Caller {
	t := clientip.TiersOf(netip.MustParseAddr(a))
	return Caller{User: user, Client: t.Host, Networks: [2]string{t.Network, t.Site}}
}

// proofAt is a proof of work the store takes as checked (package
// challenge checks solutions; the store only compares the difficulty and
// makes it single-use), so tests price places without solving them.
func proofAt(d int) Proof {
	return Proof{ID: fmt.Sprintf("p%d-%d", d, rand.Uint64()), Difficulty: d, Expires: time.Now().Add(time.Hour)}
}

// The price in Lua (networks.lua) and in Go (PriceDifficulty) agree over
// generated inputs, rise with the places held and with the pressure, ask
// nothing of a network holding none, and stay within their bounds.
func TestPriceMatchesLua(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	script := newScript("test", commonLua+networksLua, `
local out = {}
for i = 1, #ARGV, 3 do
  out[#out + 1] = price_difficulty(tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]))
end
return out`)
	r := rand.New(rand.NewPCG(26, 2))
	type in struct{ bits, held, pressure int }
	var ins []in
	for range 3000 {
		held := int(r.UintN(10))
		switch r.UintN(3) {
		case 1:
			held = int(r.UintN(5000))
		case 2:
			held = int(r.UintN(1 << 20))
		}
		ins = append(ins, in{int(r.UintN(MaxChallengeDifficulty + 1)), held, int(r.UintN(MaxPressure+3)) - 1})
	}
	var args []any
	for _, x := range ins {
		args = append(args, x.bits, x.held, x.pressure)
	}
	got, err := script.Run(context.Background(), rdb, []string{"x"}, args...).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range ins {
		d := PriceDifficulty(x.bits, x.held, x.pressure)
		if int64(d) != got[i] {
			t.Fatalf("%+v: Go %d, Lua %d", x, d, got[i])
		}
		switch {
		case d < 0 || d > MaxChallengeDifficulty:
			t.Fatalf("%+v: %d out of bounds", x, d)
		case (x.held == 0 || x.bits == 0) != (d == 0):
			t.Fatalf("%+v: %d: free exactly when nothing is held or the price is off", x, d)
		case x.held > 0 && x.bits > 0 && d < min(MaxChallengeDifficulty, x.bits+max(0, min(x.pressure, MaxPressure))):
			t.Fatalf("%+v: %d below the base and pressure", x, d)
		case PriceDifficulty(x.bits, x.held+1, x.pressure) < d, PriceDifficulty(x.bits, x.held, x.pressure+1) < d:
			t.Fatalf("%+v: %d, not monotone", x, d)
		}
		// 2^d ≥ 2^(bits+pressure) × held²: the next place costs at least
		// the curve's work (until the ceiling).
		if h := min(x.held, heldCap); x.bits > 0 && h > 0 && d < MaxChallengeDifficulty {
			p := max(0, min(x.pressure, MaxPressure))
			if float64(uint64(1)<<d) < float64(uint64(1)<<(x.bits+p))*float64(h)*float64(h) {
				t.Fatalf("%+v: %d asks less than the curve", x, d)
			}
		}
	}
}

// At the default price (13 bits) a network's place after 300 costs 2^30
// hashes, above 30 CPU-seconds of native SHA-256 on one core (the
// measured rates are in docs/attacks/bots.md), and a second tab's 2^13.
func TestPriceDefaultBounds(t *testing.T) {
	if d := PriceDifficulty(13, 300, 0); d != 30 {
		t.Errorf("301st place: %d bits, want 30", d)
	}
	if d := PriceDifficulty(13, 1, 0); d != 13 {
		t.Errorf("second place: %d bits, want 13", d)
	}
	if d := PriceDifficulty(13, 0, MaxPressure); d != 0 {
		t.Errorf("a first place under pressure: %d bits, want 0", d)
	}
}

// A network's places raise the price of its next one, step by step as
// the curve says; a proof weaker than that is refused with the
// difficulty to bring and makes no place; another network's first place
// is still free; and the places the tick admits stop counting.
func TestPriceRisesWithPlacesHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Price: Price{Bits: 13, MaxBits: MaxChallengeDifficulty}})
	enter(t, s, q, "first") // takes the interval's one admission: everyone after waits
	const home = "2001:db8:1:100::"
	r := rand.New(rand.NewPCG(26, 21))
	last := -1
	for n := range 301 {
		// Each place from another /64 of the same /56, as a bot walks it.
		c := callerAt(fmt.Sprintf("bot%d", n), fmt.Sprintf("2001:db8:1:1%02x:%x::1", n%256, r.Uint32()&0xffff))
		d, err := s.Challenge(ctx, q, c)
		if err != nil {
			t.Fatal(err)
		}
		if want := PriceDifficulty(13, n, 0); d != want || d < last {
			t.Fatalf("holding %d: challenge at %d, want %d (rising from %d)", n, d, want, last)
		}
		last = d
		if d > 0 {
			c.Proof = proofAt(d - 1)
			var ce *ChallengeError
			if _, err := s.Enter(ctx, q, Entry{Caller: c}); !errors.As(err, &ce) || ce.Difficulty != d {
				t.Fatalf("holding %d: a proof of %d: %v, want ChallengeError{%d}", n, d-1, err, d)
			}
		}
		c.Proof = proofAt(d)
		if tk, err := s.Enter(ctx, q, Entry{Caller: c}); err != nil || tk.Status != Waiting {
			t.Fatalf("holding %d: a proof of %d: %+v, %v", n, d, tk, err)
		}
	}
	if last < 30 {
		t.Fatalf("the 301st place cost %d bits, want ≥ 30", last)
	}
	if st := status(t, s, q, "bot300"); st.Position != 301 {
		t.Fatalf("the refused proofs made places: %+v", st)
	}
	// Another /56 of the same /48 pays for a quarter of its places.
	if d, err := s.Challenge(ctx, q, callerAt("", "2001:db8:1:200::1")); err != nil || d != PriceDifficulty(13, (301+SiteShare-1)/SiteShare, 0) {
		t.Fatalf("another /56 of the /48: %d, %v, want %d", d, err, PriceDifficulty(13, (301+SiteShare-1)/SiteShare, 0))
	}
	// Another network: free, as any first place.
	for _, a := range []string{"2001:db8:2:100::1", "198.51.100.7"} {
		if d, err := s.Challenge(ctx, q, callerAt("", a)); err != nil || d != 0 {
			t.Fatalf("%s: %d, %v, want 0", a, d, err)
		}
		if _, err := s.Enter(ctx, q, Entry{Caller: callerAt("fresh-"+a, a)}); err != nil {
			t.Fatalf("%s, no proof: %v", a, err)
		}
	}
	// The tick admits 200 of the network's places: they left the line
	// and no longer count.
	refill := 200
	setUpdate(t, s, q, Update{RefillSize: &refill})
	tick(t, s, rdb, q)
	if d, err := s.Challenge(ctx, q, callerAt("", home+"1")); err != nil || d != PriceDifficulty(13, 101, 0) {
		t.Fatalf("after 200 admitted: %d, %v, want %d", d, err, PriceDifficulty(13, 101, 0))
	}
}

// Concurrent enters of one network are priced one after another even
// when they share a script call (batch.go): of 40 at once, each bringing
// the proof the network's 11th place costs, exactly the two that 2^20 still
// covers (the 11th and 12th places) get in.
func TestPriceCountsOneBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Price: Price{Bits: 13, MaxBits: MaxChallengeDifficulty}})
	enter(t, s, q, "first")
	for n := range 10 {
		if _, err := s.Enter(ctx, q, Entry{Caller: withProof(callerAt(fmt.Sprintf("a%d", n), "192.0.2.1"), 32)}); err != nil {
			t.Fatal(err)
		}
	}
	d := PriceDifficulty(13, 10, 0)
	if d != PriceDifficulty(13, 11, 0) || d == PriceDifficulty(13, 12, 0) {
		t.Fatalf("the curve moved: %d, %d, %d", d, PriceDifficulty(13, 11, 0), PriceDifficulty(13, 12, 0))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	in, refused := 0, 0
	for i := range 40 {
		wg.Go(func() {
			_, err := s.Enter(ctx, q, Entry{Caller: withProof(callerAt(fmt.Sprintf("b%d", i), fmt.Sprintf("192.0.2.%d", 2+i)), d)})
			mu.Lock()
			defer mu.Unlock()
			var ce *ChallengeError
			switch {
			case err == nil:
				in++
			case errors.As(err, &ce) && ce.Difficulty > d:
				refused++
			default:
				t.Errorf("b%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if in != 2 || refused != 38 {
		t.Fatalf("%d in, %d refused; want 2 and 38", in, refused)
	}
}

func withProof(c Caller, d int) Caller {
	c.Proof = proofAt(d)
	return c
}

// While the queue's arrivals run above CalmArrivals, a network's second
// place costs more; a first place still costs nothing.
func TestPriceUnderPressure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Price: Price{Bits: 13, CalmArrivals: 1}})
	enter(t, s, q, "first")
	for i := range 60 {
		if _, err := s.Enter(ctx, q, Entry{Caller: callerAt(fmt.Sprintf("n%d", i), fmt.Sprintf("198.51.%d.1", i))}); err != nil {
			t.Fatal(err)
		}
	}
	// 60 arrivals within the 10 s window (weighed down by as much as half
	// on a slow machine): 3-6 a second, 2 or 3 bits above the base.
	d, err := s.Challenge(ctx, q, callerAt("", "198.51.0.2"))
	if err != nil || d < 13+2 || d > 13+3 {
		t.Fatalf("a network holding one under pressure: %d, %v, want 15 or 16", d, err)
	}
	if d, err := s.Challenge(ctx, q, callerAt("", "203.0.113.1")); err != nil || d != 0 {
		t.Fatalf("a fresh network under pressure: %d, %v, want 0", d, err)
	}
}

// The enter limits hold per wider network: a /56 walked /64 by /64 and a
// /24 walked address by address are each limited as a whole (and a /48
// by its own tier), with 429's wait, while a neighbour network is not.
func TestEnterLimitPerNetwork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	limits := Limits{
		EnterPerClient:  Limit{Rate: 0.001, Burst: 3},
		EnterPerNetwork: Limit{Rate: 0.001, Burst: 10},
		EnterPerSite:    Limit{Rate: 0.001, Burst: 15},
	}
	settings := Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Limits: limits}
	one, q, rdb := newStore(t, settings)
	// Two replicas, called in turn: each one's local stage sees half the
	// calls, so the shared buckets in Redis must hold the limit.
	two, err := NewStore(rdb, []string{q}, settings, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	replicas := []*Store{one, two}
	calls := 0
	s := func() *Store { calls++; return replicas[calls%2] }
	for _, tc := range []struct {
		name      string
		addr      func(i int) string // the i-th client, each a fresh address budget
		neighbour string
	}{
		{"/56 of /64s", func(i int) string { return fmt.Sprintf("2001:db8:5:1%02x::1", i) }, "2001:db8:5:200::1"},
		{"/24 of addresses", func(i int) string { return fmt.Sprintf("203.0.113.%d", 1+i) }, "203.0.114.1"},
	} {
		for i := range 10 {
			if _, err := s().Enter(ctx, q, Entry{Caller: callerAt(fmt.Sprintf("%s-%d", tc.name, i), tc.addr(i))}); err != nil {
				t.Fatalf("%s: client %d within the network's burst: %v", tc.name, i, err)
			}
		}
		for i := 10; i < 20; i++ {
			_, err := s().Enter(ctx, q, Entry{Caller: callerAt(fmt.Sprintf("%s-%d", tc.name, i), tc.addr(i))})
			refusedWith(t, err, ErrRateLimited, 2000*time.Second)
		}
		if _, err := s().Enter(ctx, q, Entry{Caller: callerAt(tc.name+"-n", tc.neighbour)}); err != nil {
			t.Fatalf("%s: the neighbour network: %v", tc.name, err)
		}
	}
	// The /48 has had 11 (10 and the neighbour); four more /56s take it
	// to its burst of 15, and the next /56 is refused.
	for i := range 4 {
		if _, err := s().Enter(ctx, q, Entry{Caller: callerAt(fmt.Sprintf("site%d", i), fmt.Sprintf("2001:db8:5:%x00::1", 3+i))}); err != nil {
			t.Fatalf("/56 %d within the /48's burst: %v", i, err)
		}
	}
	_, err = s().Enter(ctx, q, Entry{Caller: callerAt("site-over", "2001:db8:5:f00::1")})
	refusedWith(t, err, ErrRateLimited, 2000*time.Second)
	// Fetching challenges has buckets of its own, per tier alike.
	for i := range 10 {
		if _, err := s().Challenge(ctx, q, callerAt("", fmt.Sprintf("192.0.2.%d", 1+i))); err != nil {
			t.Fatalf("challenge %d: %v", i, err)
		}
	}
	_, err = s().Challenge(ctx, q, callerAt("", "192.0.2.200"))
	refusedWith(t, err, ErrRateLimited, 2000*time.Second)
}

// A crowd spread over many networks makes no key per person: a network's
// first place is recorded in the replica's memory (seen.go), and only its
// second starts the ZSET that counts its places (before, every place made
// two keys for an IPv6 client, 579 bytes of Redis a waiting place against
// 137; then a filter in Redis cost every enter 15-19 µs of Redis CPU). The
// record still prices the network's next place as a second; concurrent
// first places of many networks, batched together, stay free.
func TestPriceFirstPlacesMakeNoKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Price: Price{Bits: 13}})
	enter(t, s, q, "first")
	addr := func(i int) string {
		if i%2 == 0 {
			return fmt.Sprintf("2001:db8:%x:%x00::1", i, i%256) // its own /48 and /56
		}
		return fmt.Sprintf("198.%d.%d.1", 18+i/256, i%256) // its own /24
	}
	before, err := rdb.DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	const crowd = 400
	var wg sync.WaitGroup
	for i := range crowd {
		wg.Go(func() {
			if tk, err := s.Enter(ctx, q, Entry{Caller: callerAt(fmt.Sprintf("c%d", i), addr(i))}); err != nil || tk.Status != Waiting {
				t.Errorf("c%d from %s: %+v, %v", i, addr(i), tk, err)
			}
		})
	}
	wg.Wait()
	netKeys, err := rdb.Keys(ctx, rediskeys.NetPlaces(q, "*")).Result()
	if err != nil || len(netKeys) != 0 {
		t.Fatalf("%d first places made %d network keys (%v): want none", crowd, len(netKeys), err)
	}
	if after, err := rdb.Keys(ctx, "wr:{"+q+"}:*").Result(); err != nil || len(after) > 16 {
		t.Fatalf("the queue has %d keys after %d first places (%v, %d in the database before): want its own few", len(after), crowd, err, before)
	}
	// Each of those networks now holds one place: its next costs a
	// second place's price, and then counts both.
	for _, i := range []int{2, 3} {
		c := callerAt(fmt.Sprintf("again%d", i), addr(i))
		if d, err := s.Challenge(ctx, q, c); err != nil || d != PriceDifficulty(13, 1, 0) {
			t.Fatalf("%s's second place: %d, %v, want %d", addr(i), d, err, PriceDifficulty(13, 1, 0))
		}
		c.Proof = proofAt(PriceDifficulty(13, 1, 0))
		if _, err := s.Enter(ctx, q, Entry{Caller: c}); err != nil {
			t.Fatal(err)
		}
		if d, err := s.Challenge(ctx, q, callerAt("", addr(i))); err != nil || d != PriceDifficulty(13, 2, 0) {
			t.Fatalf("%s's third place: %d, %v, want %d", addr(i), d, err, PriceDifficulty(13, 2, 0))
		}
	}
}

// The first place of a network is free through each replica once: a
// second replica, which has not placed anyone from the network, lets its
// next place in free too, and from then on both price it by the places it
// holds over every replica (its ZSET in Redis), counting at least the one
// each has seen. One network spreading its enters over R replicas gets R
// free places, no more.
func TestPriceFirstPlacePerReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	settings := Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Price: Price{Bits: 13}}
	a, q, rdb := newStore(t, settings)
	b, err := NewStore(rdb, []string{q}, settings, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	enter(t, a, q, "first")
	const network = "192.0.2.%d"
	in := func(s *Store, user string, i, bits int) {
		t.Helper()
		c := callerAt(user, fmt.Sprintf(network, i))
		if d, err := s.Challenge(ctx, q, c); err != nil || d != bits {
			t.Fatalf("%s: challenge %d, %v; want %d bits", user, d, err, bits)
		}
		c.Proof = proofAt(bits)
		if bits == 0 {
			c.Proof = Proof{}
		}
		if tk, err := s.Enter(ctx, q, Entry{Caller: c}); err != nil || tk.Status != Waiting {
			t.Fatalf("%s: %+v, %v", user, tk, err)
		}
	}
	in(a, "a1", 1, 0)                         // the network's first place through a
	in(b, "b1", 2, 0)                         // and through b
	in(a, "a2", 3, PriceDifficulty(13, 1, 0)) // a saw one; Redis holds none yet
	in(b, "b2", 4, PriceDifficulty(13, 2, 0)) // b: the one a counted (a2, and its stand-in)
	in(a, "a3", 5, PriceDifficulty(13, 3, 0))
	// Without a proof the next is refused, on either replica.
	for _, s := range []*Store{a, b} {
		var ce *ChallengeError
		if _, err := s.Enter(ctx, q, Entry{Caller: callerAt("late", fmt.Sprintf(network, 9))}); !errors.As(err, &ce) {
			t.Fatalf("a place without its price: %v, want a challenge", err)
		}
	}
}

// networks.lua keeps a network's ZSET as long as Go names a window.
func TestSeenWindowMatchesLua(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	v, err := runLua(context.Background(), rdb, commonLua+networksLua, `return PRICE_HELD_TTL_MS`, nil).Int64()
	if err != nil || v != seenWindow.Milliseconds() {
		t.Fatalf("PRICE_HELD_TTL_MS %d, %v; want seenWindow, %d", v, err, seenWindow.Milliseconds())
	}
}
