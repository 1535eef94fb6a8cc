package passledger

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/waitroom/waitroom/internal/hygiene/clientip"
)

// Seen compares addresses locally as network gives them and sends Redis
// clientip.Key's form: two addresses are the same client in one exactly
// when they are in the other, over generated IPv4, IPv6 (with zones, in
// and out of one /64) and IPv4-mapped addresses, and the invalid one.
func TestNetworkMatchesKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	gen := func() netip.Addr {
		var b [16]byte
		switch rng.IntN(5) {
		case 0:
			return netip.Addr{}
		case 1, 2: // IPv4 from a small range, so some repeat
			return netip.AddrFrom4([4]byte{10, 0, byte(rng.IntN(2)), byte(rng.IntN(4))})
		case 3: // IPv4-mapped
			return netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 0, 14: byte(rng.IntN(2)), 15: byte(rng.IntN(4))})
		default: // IPv6 in two /64s, random host part, sometimes zoned
			b[0], b[1], b[7] = 0x20, 0x01, byte(rng.IntN(2))
			for i := 8; i < 16; i++ {
				b[i] = byte(rng.IntN(256))
			}
			a := netip.AddrFrom16(b)
			if rng.IntN(3) == 0 {
				a = a.WithZone("eth0")
			}
			return a
		}
	}
	for range 20000 {
		a, b := gen(), gen()
		if (network(a) == network(b)) != (clientip.Key(a) == clientip.Key(b)) {
			t.Fatalf("%v and %v: network says same %v, clientip.Key %q and %q", a, b, network(a) == network(b), clientip.Key(a), clientip.Key(b))
		}
	}
}
