package clientip

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

func TestTiersOf(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want Tiers
	}{
		{"192.0.2.7", Tiers{"192.0.2.7", "192.0.2.0/24", ""}},
		{"::ffff:192.0.2.7", Tiers{"192.0.2.7", "192.0.2.0/24", ""}},
		{"2001:db8:1:1ff:aaaa::1", Tiers{"2001:db8:1:1ff::/64", "2001:db8:1:100::/56", "2001:db8:1::/48"}},
		{"fe80::1%eth0", Tiers{"fe80::/64", "fe80::/56", "fe80::/48"}},
		{"", Tiers{Host: "unknown"}},
	} {
		var a netip.Addr
		if tc.addr != "" {
			a = netip.MustParseAddr(tc.addr)
		}
		if got := TiersOf(a); got != tc.want {
			t.Errorf("TiersOf(%q) = %+v, want %+v", tc.addr, got, tc.want)
		}
	}
}

// tiersAgree checks the tiers of two addresses against the networks they
// are in: one key per tier exactly when both are in the same /24 (IPv4,
// an IPv6 spelling of one included: mapped, 6to4, Teredo) or /56 and /48
// (IPv6), never a key of one tier or family equal to another's, and an
// IPv6 spelling of an IPv4 address never outside that address's tiers.
// spelled checks that a's tiers are spelled as Key and the prefixes'
// canonical forms (Tiers; TiersOf and AddressTiers spell all three into
// one string).
func spelled(t *testing.T, a netip.Addr) {
	t.Helper()
	u := Embedded(a).WithZone("")
	canon := func(bits int) string {
		p, _ := u.Prefix(bits)
		return p.String()
	}
	want, wantAddr := Tiers{Host: Key(a)}, Tiers{Host: Key(a)}
	switch {
	case !u.IsValid():
	case u.Is4():
		want.Network, wantAddr.Network = canon(24), canon(32)
	default:
		want.Network, want.Site, wantAddr.Network = canon(56), canon(48), canon(64)
	}
	if got := TiersOf(a); got != want {
		t.Fatalf("TiersOf(%v) = %+v, want %+v", a, got, want)
	}
	if got := AddressTiers(a); got != wantAddr {
		t.Fatalf("AddressTiers(%v) = %+v, want %+v", a, got, wantAddr)
	}
}

func tiersAgree(t *testing.T, a, b netip.Addr) {
	t.Helper()
	ta, tb := TiersOf(a), TiersOf(b)
	ua, ub := Embedded(a).WithZone(""), Embedded(b).WithZone("")
	same := func(bits4, bits6 int) bool {
		if ua.Is4() != ub.Is4() {
			return false
		}
		bits := bits6
		if ua.Is4() {
			bits = bits4
		}
		if bits < 0 {
			return false
		}
		pa, _ := ua.Prefix(bits)
		pb, _ := ub.Prefix(bits)
		return pa == pb
	}
	if got, want := ta.Host == tb.Host, same(32, 64); got != want {
		t.Fatalf("%v, %v: same host %v, want %v (%+v, %+v)", a, b, got, want, ta, tb)
	}
	if got, want := ta.Network == tb.Network, same(24, 56); got != want {
		t.Fatalf("%v, %v: same network %v, want %v (%+v, %+v)", a, b, got, want, ta, tb)
	}
	if got, want := ta.Site == tb.Site && ta.Site != "", same(-1, 48); got != want {
		t.Fatalf("%v, %v: same site %v, want %v (%+v, %+v)", a, b, got, want, ta, tb)
	}
	for _, x := range []netip.Addr{a, b} {
		spelled(t, x)
	}
	for _, x := range []Tiers{ta, tb} {
		if x.Host == "" || x.Network == "" || x.Host == x.Network || x.Network == x.Site || x.Host == x.Site {
			t.Fatalf("%v, %v: tiers %+v: a tier empty or two alike", a, b, x)
		}
		if (x.Site == "") != (x == ta && ua.Is4() || x == tb && ub.Is4()) {
			t.Fatalf("%+v: a site tier for IPv4 or none for IPv6", x)
		}
	}
	// The keys of one tier never name another's: a host key is never any
	// address's network key, nor a network key any site key.
	if ta.Host == tb.Network || ta.Network == tb.Site || ta.Host == tb.Site {
		t.Fatalf("%v, %v: keys of different tiers coincide: %+v, %+v", a, b, ta, tb)
	}
	if ua.Is4() && TiersOf(a) != TiersOf(ua) {
		t.Fatalf("%v escapes its IPv4 tiers: %+v, %+v", a, TiersOf(a), TiersOf(ua))
	}
}

// addrFrom makes an address of one of the forms a client's can take from
// 17 bytes: b[0] picks IPv4, IPv4-mapped IPv6, IPv6 or IPv6 with a zone.
func addrFrom(b []byte) (netip.Addr, bool) {
	if len(b) < 17 {
		return netip.Addr{}, false
	}
	var a16 [16]byte
	copy(a16[:], b[1:17])
	switch b[0] % 4 {
	case 0:
		return netip.AddrFrom4([4]byte(a16[:4])), true
	case 1:
		return netip.AddrFrom16(netip.AddrFrom4([4]byte(a16[:4])).As16()), true
	case 2:
		return netip.AddrFrom16(a16), true
	default:
		a := netip.AddrFrom16(a16)
		if a.Is4In6() {
			return a, true // a mapped address takes no zone
		}
		return a.WithZone("eth0"), true
	}
}

// near derives from b an address that shares a prefix with it of a
// length picked by k, so that pairs in one network come up often.
func near(b []byte, k byte) []byte {
	c := append([]byte(nil), b...)
	keep := 1 + []int{2, 3, 4, 6, 7, 8, 16}[int(k)%7] // bytes of the address kept
	for i := keep; i < len(c); i++ {
		c[i] ^= k | 1
	}
	return c
}

// Generated pairs with a fixed seed, half of them close neighbours.
func TestTiersGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 2))
	for range 200000 {
		b := make([]byte, 17)
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		c := near(b, byte(r.UintN(256)))
		if r.UintN(2) == 0 {
			c[0] = byte(r.UintN(4)) // another form of (maybe) the same address
		}
		a1, _ := addrFrom(b)
		a2, _ := addrFrom(c)
		tiersAgree(t, a1, a2)
	}
}

func FuzzTiers(f *testing.F) {
	seeds := [][2]string{
		{"192.0.2.7", "192.0.2.200"},
		{"192.0.2.7", "192.0.3.7"},
		{"::ffff:192.0.2.7", "192.0.2.9"},
		{"::ffff:192.0.2.7", "::ffff:192.0.3.7"},
		{"2001:db8:1:100::1", "2001:db8:1:1ff::1"},
		{"2001:db8:1:100::1", "2001:db8:1:200::1"},
		{"2001:db8:1::1", "2001:db8:2::1"},
		{"fe80::1%eth0", "fe80::2"},
		{"::192.0.2.7", "192.0.2.7"},
		{"::", "0.0.0.0"},
		{"2002:c000:0207::1", "192.0.2.9"},
		{"2002:c000:0207::1", "2002:c000:0307::1"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdf8", "192.0.2.7"},
	}
	for _, s := range seeds {
		a, b := netip.MustParseAddr(s[0]), netip.MustParseAddr(s[1])
		f.Add(form(a), form(b))
	}
	f.Fuzz(func(t *testing.T, x, y []byte) {
		a, ok1 := addrFrom(x)
		b, ok2 := addrFrom(y)
		if ok1 && ok2 {
			tiersAgree(t, a, b)
		}
	})
}

// form is a's 17-byte input for addrFrom.
func form(a netip.Addr) []byte {
	b := make([]byte, 17)
	switch {
	case a.Is4():
		b[0] = 0
		copy(b[1:], a.AsSlice())
	case a.Is4In6():
		b[0] = 1
		v4 := a.Unmap().As4()
		copy(b[1:], v4[:])
	case a.Zone() != "":
		b[0] = 3
		v6 := a.As16()
		copy(b[1:], v6[:])
	default:
		b[0] = 2
		v6 := a.As16()
		copy(b[1:], v6[:])
	}
	return b
}

// An enter spells its tiers in one allocation (spell), not one a tier.
func TestTiersOneAllocation(t *testing.T) {
	for _, s := range []string{"192.0.2.7", "2001:db8:1:100::1", "2002:c000:0207::1"} {
		a := netip.MustParseAddr(s)
		if n := testing.AllocsPerRun(100, func() { _ = TiersOf(a) }); n > 1 {
			t.Errorf("TiersOf(%s): %v allocations, want 1", s, n)
		}
	}
}
