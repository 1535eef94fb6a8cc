package clientaddr_test

import (
	"net/netip"
	"testing"

	"github.com/waitroom/waitroom/internal/testkit/clientaddr"
)

// Blocks never overlap, and every address a block gives is in it and in
// the half of the benchmarking range kept for them.
func TestBlocksAreDistinct(t *testing.T) {
	bench := netip.MustParsePrefix("198.19.0.0/16")
	seen := map[string]bool{}
	for range 200 {
		b := clientaddr.New(t)
		if !bench.Contains(b.Prefix().Addr()) || b.Prefix().Bits() != 26 {
			t.Fatalf("block %s: want a /26 of %s", b, bench)
		}
		for range clientaddr.Size - 1 {
			a := b.Next()
			if seen[a] {
				t.Fatalf("%s given twice", a)
			}
			seen[a] = true
			if !b.Prefix().Contains(netip.MustParseAddr(a)) {
				t.Fatalf("%s is not in its block %s", a, b)
			}
		}
	}
	b := clientaddr.New(t)
	if b.Addr(3) != b.Addr(3) || b.Addr(3) == b.Addr(4) {
		t.Fatalf("Addr is not a fixed address per index: %s %s", b.Addr(3), b.Addr(4))
	}
}
