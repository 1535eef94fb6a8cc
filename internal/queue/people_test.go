package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/rediskeys"
	"github.com/waitroom/waitroom/internal/redistest"
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
		if _, err := s.EnterAs(ctx, q, c); err != nil {
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
		if tk, err := s.EnterAs(ctx, q, c); err != nil || tk.Status != Waiting {
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
	if _, err := s.EnterAs(ctx, q, c); !errors.As(err, &ce) || ce.Difficulty != DefaultMaxBits {
		t.Fatalf("a proof under the ceiling: %v", err)
	}
	c.Proof = proofAt(DefaultMaxBits)
	if tk, err := s.EnterAs(ctx, q, c); err != nil || tk.Status != Waiting {
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
	if tk, err := s.EnterAs(ctx, q, callerAt("a1", "192.0.2.1")); err != nil || tk.Status != Waiting {
		t.Fatalf("first place: %+v, %v", tk, err)
	}
	// Its second: the check, and its challenge says so too.
	second := callerAt("a2", "192.0.2.2")
	if _, err := s.EnterAs(ctx, q, second); !errors.Is(err, ErrHumanCheckRequired) {
		t.Fatalf("second place: %v, want ErrHumanCheckRequired", err)
	}
	if _, err := s.Challenge(ctx, q, second); !errors.Is(err, ErrHumanCheckRequired) {
		t.Fatalf("second place's challenge: %v, want ErrHumanCheckRequired", err)
	}
	// A proof of work does not replace it while the provider answers.
	second.Proof = proofAt(32)
	if _, err := s.EnterAs(ctx, q, second); !errors.Is(err, ErrHumanCheckRequired) {
		t.Fatalf("second place with a proof: %v, want ErrHumanCheckRequired", err)
	}
	second.Proof, second.Human = Proof{}, true
	if tk, err := s.EnterAs(ctx, q, second); err != nil || tk.Status != Waiting {
		t.Fatalf("second place, checked: %+v, %v", tk, err)
	}
	// Hosting: asked from the first place.
	if _, err := s.EnterAs(ctx, q, asPricing(callerAt("dc", "203.0.113.1"), PriceCeiling)); !errors.Is(err, ErrHumanCheckRequired) {
		t.Fatalf("hosting: %v, want ErrHumanCheckRequired", err)
	}
	// A member: nothing.
	if _, err := s.EnterAs(ctx, q, asPricing(callerAt("m", "192.0.2.3"), PriceNone)); err != nil {
		t.Fatalf("member: %v", err)
	}
	// The provider away: proof of work at the ceiling, never open.
	avail = false
	var ce *ChallengeError
	if _, err := s.EnterAs(ctx, q, callerAt("a3", "192.0.2.4")); !errors.As(err, &ce) || ce.Difficulty != DefaultMaxBits {
		t.Fatalf("provider away: %v, want a challenge at %d", err, DefaultMaxBits)
	}
	avail = true
	// always: everyone, members and first places too.
	mode = HumanAlways
	setUpdate(t, s, q, Update{HumanCheck: &mode})
	for _, c := range []Caller{callerAt("b1", "198.51.100.1"), asPricing(callerAt("m2", "198.51.100.2"), PriceNone)} {
		if _, err := s.EnterAs(ctx, q, c); !errors.Is(err, ErrHumanCheckRequired) {
			t.Fatalf("always, %s: %v", c.User, err)
		}
		c.Human = true
		if _, err := s.EnterAs(ctx, q, c); err != nil {
			t.Fatalf("always, %s checked: %v", c.User, err)
		}
	}
	bad := "sometimes"
	if err := s.UpdateSettings(ctx, q, Update{HumanCheck: &bad}); err == nil {
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
		if _, err := s.EnterAs(ctx, q, c); err != nil {
			t.Fatal(err)
		}
	}
	enterMany(t, s, q, []string{"p1", "p2"})
	for _, u := range cover {
		if err := s.Leave(ctx, q, u); err != nil {
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
	if _, err := s.Enter(ctx, q, "n1"); err != nil {
		t.Fatalf("first newcomer: %v", err)
	}
	if _, err := s.Enter(ctx, q, "n2"); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("second newcomer with 8 held and 1 waiting, cap 9: %v, want ErrQueueFull", err)
	}
}

// blockOf splits seenBlock's code: the byte offset and the mask.
func blockOf(network string) (off uint64, mask uint32) {
	code := seenBlock(network)
	return code >> 32, uint32(code)
}

// networks.lua sets the bits seenBlock names (big-endian: a block's
// highest bit is its first byte's first), over generated networks, and
// reads them back.
func TestSeenBlocksMatchLua(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Client(t)
	cur := fmt.Sprintf("seen-blocks-%d", time.Now().UnixNano())
	prev := cur + "-prev"
	t.Cleanup(func() { rdb.Del(context.Background(), cur, prev) })
	script := redis.NewScript(commonLua + networksLua + `
local net = {'n', tonumber(ARGV[1]), KEYS[1], KEYS[2]}
local before = seen_read({net}, {}).n
networks_held({net}, nil)
held_add({net}, 'u', 1)
seen_blocks = {} -- read Redis again, not this call's view
return {before, seen_read({net}, {}).n}`)
	for i := range 50 {
		network := fmt.Sprintf("2001:db8:%x::/56", i*7919)
		h := seenBlock(network)
		rdb.Del(ctx, cur)
		got, err := script.Run(ctx, rdb, []string{cur, prev}, strconv.FormatUint(h, 10)).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != 0 || got[1] != 2 {
			t.Fatalf("hash %d: seen %v before and after, want 0 then 2", h, got)
		}
		off, mask := blockOf(network)
		want := map[int64]bool{}
		for b := range 32 {
			if mask&(1<<b) != 0 {
				want[8*int64(off)+31-int64(b)] = true // big-endian: the highest bit first
			}
		}
		for o := range want {
			if bit, err := rdb.GetBit(ctx, cur, o).Result(); err != nil || bit != 1 {
				t.Fatalf("hash %d: bit %d is %d (%v), want 1", h, o, bit, err)
			}
		}
		if n, err := rdb.BitCount(ctx, cur, nil).Result(); err != nil || n != int64(len(want)) {
			t.Fatalf("hash %d: %d bits set (%v), want %d", h, n, err, len(want))
		}
	}
}

// The seen filters misprice about 0.05 % of first places, under 0.1 %,
// with a million networks in each of the two windows read (one bit per
// network made it about 6 % in one window). The filters are built here
// as networks.lua builds them (TestSeenBlocksMatchLua) and read by
// networks.lua.
func TestSeenFilterFalsePositives(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Client(t)
	q := fmt.Sprintf("seen%d", time.Now().UnixNano())
	shardKey := func(window string, shard uint64) string {
		return rediskeys.NetSeen(q, window, strconv.FormatUint(shard, 10))
	}
	t.Cleanup(func() {
		for s := range uint64(seenShards) {
			rdb.Del(context.Background(), shardKey("1", s), shardKey("0", s))
		}
	})
	const perWindow, probes = 1_000_000, 100_000
	var buf []byte
	network := func(window, i int) string {
		buf = strconv.AppendInt(append(strconv.AppendInt(append(buf[:0], 'w'), int64(window), 10), ':'), int64(i), 10)
		return string(buf)
	}
	for w, window := range []string{"1", "0"} {
		shards := make([][]byte, seenShards)
		for s := range shards {
			shards[s] = make([]byte, seenBlocks*4)
		}
		for i := range perWindow {
			n := network(w, i)
			shard := seenHash(n) % seenShards // its own shard, as if it were its caller's widest network
			off, mask := blockOf(n)
			block := shards[shard][off : off+4]
			block[0], block[1], block[2], block[3] = block[0]|byte(mask>>24), block[1]|byte(mask>>16), block[2]|byte(mask>>8), block[3]|byte(mask)
		}
		pipe := rdb.Pipeline()
		for s, b := range shards {
			pipe.Set(ctx, shardKey(window, uint64(s)), b, time.Hour)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	probe := redis.NewScript(commonLua + networksLua + `
local n = 0
for i = 1, #ARGV do
  local h = tonumber(ARGV[i])
  if seen_read({{'n', h, KEYS[2 * i - 1], KEYS[2 * i]}}, {}).n > 0 then
    n = n + 1
  end
end
return n`)
	found := 0
	const batch = 500
	for from := 0; from < probes; from += batch {
		var keys []string
		var args []any
		for i := from; i < from+batch; i++ {
			n := network(9, i)
			shard := seenHash(n) % seenShards
			keys = append(keys, shardKey("1", shard), shardKey("0", shard))
			args = append(args, strconv.FormatUint(seenBlock(n), 10))
		}
		n, err := probe.Run(ctx, rdb, keys, args...).Int()
		if err != nil {
			t.Fatal(err)
		}
		found += n
	}
	rate := float64(found) / probes
	t.Logf("%d of %d unseen networks read as seen with %d networks in each window: %.4f %%", found, probes, perWindow, 100*rate)
	if rate > 0.001 {
		t.Fatalf("false positives %.4f %%, want ≤ 0.1 %%", 100*rate)
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
	if _, err := s.EnterAs(ctx, q, callerAt("a0", "192.0.2.1")); err != nil {
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
			_, err := s.EnterAs(ctx, q, c)
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
