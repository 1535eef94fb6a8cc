// Package clientaddr hands each test client addresses of its own, so that
// tests running in parallel on one Redis never share a per-client budget
// (a lockout, a rate limit, a network's price). An address one test
// hard-codes, or one drawn at random from a range that other tests use,
// is sooner or later another test's too, and that test then sees a 429
// where it wanted a 401.
//
// The addresses come from 198.19.0.0/16, half of the range RFC 2544 sets
// aside for benchmarking, which no real client has; the other half,
// 198.18.0.0/16, is left to tests that need addresses of a fixed shape
// (several of one /24, a network's neighbours). Blocks are handed out by
// a counter, so no two blocks of one test binary overlap; the counter
// starts at a random block, so that two runs on one long-lived Redis
// (REDIS_ADDR) rarely meet each other's state either.
package clientaddr

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
)

// Size is how many addresses a Block holds: a /26.
const Size = 64

// blocks is how many Blocks 198.19.0.0/16 holds.
const blocks = 1 << (32 - 16) / Size

var (
	base = netip.MustParseAddr("198.19.0.0").As4()

	start = rand.Uint32N(blocks)
	taken atomic.Uint32
)

// Block is a /26 of client addresses that belongs to one test.
type Block struct {
	tb     testing.TB
	prefix netip.Prefix

	mu   sync.Mutex
	next int
}

// New returns a block no other caller in this test binary has had. Past
// blocks' worth of calls it starts over (a binary that asks that often
// has long finished with the first ones).
func New(tb testing.TB) *Block {
	tb.Helper()
	n := (start + taken.Add(1) - 1) % blocks
	v := (uint32(base[0])<<24 | uint32(base[1])<<16) + n*Size
	a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	return &Block{tb: tb, prefix: netip.PrefixFrom(a, 32-6)}
}

// Prefix is the block, e.g. for a trusted or a bypass range.
func (b *Block) Prefix() netip.Prefix { return b.prefix }

// Addr is the block's i-th address, 1 ≤ i < Size: the same for the same
// i, for tests that speak of "the first client" twice.
func (b *Block) Addr(i int) string {
	b.tb.Helper()
	if i < 1 || i >= Size {
		b.tb.Fatalf("clientaddr: address %d of a block of %d", i, Size)
	}
	a := b.prefix.Addr().As4()
	a[3] += byte(i)
	return netip.AddrFrom4(a).String()
}

// Next is an address of the block that Next has not returned before: a
// fresh client each call.
func (b *Block) Next() string {
	b.tb.Helper()
	b.mu.Lock()
	b.next++
	i := b.next
	b.mu.Unlock()
	if i >= Size {
		b.tb.Fatalf("clientaddr: more than %d clients from one block; take another (New)", Size-1)
	}
	return b.Addr(i)
}

// String is the block in CIDR form.
func (b *Block) String() string { return fmt.Sprint(b.prefix) }
