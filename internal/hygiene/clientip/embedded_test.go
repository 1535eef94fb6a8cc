package clientip

import (
	"net/netip"
	"testing"
	"testing/quick"
)

func TestEmbedded(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2002:c000:0207::1", "192.0.2.7"},
		{"2002:c000:0207:ffff:1:2:3:4", "192.0.2.7"},
		// Teredo: server 65.54.227.120, client 192.0.2.7 inverted.
		{"2001:0:4136:e378:8000:63bf:3fff:fdf8", "192.0.2.7"},
		{"2001:db8::1", "2001:db8::1"},
		{"2001:1::1", "2001:1::1"}, // outside Teredo's /32
		{"2003::1", "2003::1"},
		{"fe80::1%eth0", "fe80::1%eth0"},
	} {
		if got := Embedded(netip.MustParseAddr(tc.addr)); got != netip.MustParseAddr(tc.want) {
			t.Errorf("Embedded(%s) = %s, want %s", tc.addr, got, tc.want)
		}
	}
	if got := Embedded(netip.Addr{}); got.IsValid() {
		t.Errorf("Embedded of the zero Addr = %s", got)
	}
}

// sixToFour is v4's 6to4 spelling, with rest filling the bits after it
// (subnet and interface id, anything the site picks).
func sixToFour(v4 [4]byte, rest [10]byte) netip.Addr {
	b := [16]byte{0x20, 0x02, v4[0], v4[1], v4[2], v4[3]}
	copy(b[6:], rest[:])
	return netip.AddrFrom16(b)
}

// teredo is v4's Teredo spelling through server, with flags and port.
func teredo(v4, server [4]byte, flags, port [2]byte) netip.Addr {
	b := [16]byte{0x20, 0x01, 0, 0, server[0], server[1], server[2], server[3], flags[0], flags[1], port[0], port[1]}
	for i, x := range v4 {
		b[12+i] = ^x
	}
	return netip.AddrFrom16(b)
}

// Over generated IPv4 addresses, every IPv6 spelling of one has that
// address's tiers and key, whatever else its bits say.
func TestEmbeddedTiersGenerated(t *testing.T) {
	sameAs := func(v4 [4]byte, a netip.Addr) bool {
		x := netip.AddrFrom4(v4)
		return Embedded(a) == x && TiersOf(a) == TiersOf(x) && Key(a) == Key(x) && AddressTiers(a) == AddressTiers(x)
	}
	checks := map[string]any{
		"6to4": func(v4 [4]byte, rest [10]byte) bool { return sameAs(v4, sixToFour(v4, rest)) },
		"Teredo": func(v4, server [4]byte, flags, port [2]byte) bool {
			return sameAs(v4, teredo(v4, server, flags, port))
		},
		"mapped": func(v4 [4]byte) bool { return sameAs(v4, netip.AddrFrom16(netip.AddrFrom4(v4).As16())) },
	}
	for name, f := range checks {
		if err := quick.Check(f, &quick.Config{MaxCount: 20000}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Four sites' 6to4 /48s whose IPv4 addresses share a /24 share that /24's
// network tier, as the IPv4 addresses would: a host cannot leave its /24
// by asking a relay for another spelling.
func TestSixToFourSitesShareTheirSlash24(t *testing.T) {
	want := TiersOf(netip.MustParseAddr("198.51.100.1")).Network
	for _, a := range []string{"2002:c633:6401::1", "2002:c633:6402:1::1", "2002:c633:64fe::9", "2002:c633:64ff:ffff::"} {
		if got := TiersOf(netip.MustParseAddr(a)); got.Network != want || got.Site != "" {
			t.Errorf("TiersOf(%s) = %+v, want network %s and no site", a, got, want)
		}
	}
}

func TestAddressTiers(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want Tiers
	}{
		{"192.0.2.7", Tiers{"192.0.2.7", "192.0.2.7/32", ""}},
		{"::ffff:192.0.2.7", Tiers{"192.0.2.7", "192.0.2.7/32", ""}},
		{"2002:c000:0207::1", Tiers{"192.0.2.7", "192.0.2.7/32", ""}},
		{"2001:db8:1:1ff:aaaa::1", Tiers{"2001:db8:1:1ff::/64", "2001:db8:1:1ff::/64", ""}},
		{"fe80::1%eth0", Tiers{"fe80::/64", "fe80::/64", ""}},
		{"", Tiers{Host: "unknown"}},
	} {
		var a netip.Addr
		if tc.addr != "" {
			a = netip.MustParseAddr(tc.addr)
		}
		if got := AddressTiers(a); got != tc.want {
			t.Errorf("AddressTiers(%q) = %+v, want %+v", tc.addr, got, tc.want)
		}
	}
	// Two neighbours in a shared /24 never share a network budget.
	a, b := AddressTiers(netip.MustParseAddr("203.0.113.1")), AddressTiers(netip.MustParseAddr("203.0.113.2"))
	if a.Network == b.Network {
		t.Errorf("neighbours share %s", a.Network)
	}
}
