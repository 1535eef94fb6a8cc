package clientip

import "net/netip"

// Tiers are the budgets one client address falls in, narrowest first.
// A limit kept per address alone is bought cheaply: a home
// IPv6 /56 is 256 /64s and an IPv4 /24 256 addresses, each a fresh budget.
// So the enter limits and the price of a place (the proof of work rising
// with the places a network holds) are kept per tier as well:
//
//   - Host: the address (IPv4) or its /64 (IPv6), as Key;
//   - Network: the IPv4 /24 or the IPv6 /56, what one subscriber or one
//     small office usually gets;
//   - Site: the IPv6 /48, what one site gets and a tunnel broker hands out
//     for free ("" for IPv4: a /16 is a provider, not a client).
//
// An IPv4-mapped IPv6 address, and a 6to4 or Teredo address, is the IPv4
// address it carries in every tier (Embedded), and a zone is dropped, so
// no spelling buys another budget. The zero Addr
// is "unknown" as Host, with no wider tiers. Each tier's key is the
// prefix's canonical form ("192.0.2.0/24", "2001:db8:1:100::/56"), so keys
// of different tiers, and of IPv4 and IPv6, never coincide.
type Tiers struct {
	Host, Network, Site string
}

// TiersOf returns a's tiers.
func TiersOf(a netip.Addr) Tiers {
	a = Embedded(a).WithZone("")
	switch {
	case !a.IsValid():
		return Tiers{Host: "unknown"}
	case a.Is4():
		return spell(a, 32, 24, 0)
	default:
		return spell(a, 64, 56, 48)
	}
}

// AddressTiers returns a's tiers when a is in a network the operator
// classes as shared (carrier NAT, a mobile carrier, a campus): thousands
// of people behind one /24 would otherwise pay for their neighbours'
// places, so such a network is counted per address, never per /24 or /56.
// Host is TiersOf's; Network is the address itself (an IPv4 one as
// "192.0.2.7/32", an IPv6 one as its /64, the block a subscriber gets);
// Site is "". Embedded addresses count as their IPv4, as in TiersOf.
func AddressTiers(a netip.Addr) Tiers {
	a = Embedded(a).WithZone("")
	switch {
	case !a.IsValid():
		return Tiers{Host: "unknown"}
	case a.Is4():
		return spell(a, 32, 32, 0)
	default:
		return spell(a, 64, 64, 0)
	}
}

// Embedded returns the IPv4 address a carries when it is an IPv6 spelling
// of one, and otherwise a unmapped:
//
//   - IPv4-mapped (::ffff:0:0/96): the last 32 bits;
//   - 6to4 (2002::/16): bits 16-47, the site's IPv4 address;
//   - Teredo (2001::/32): the last 32 bits inverted, the client's address
//     as its NAT shows it.
//
// A client reaching the room through a 6to4 relay or a Teredo tunnel is
// the IPv4 host behind it: priced and limited as its IPv6 address, it
// would buy a fresh /48 per spelling of its one IPv4 address.
func Embedded(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if !a.Is6() {
		return a
	}
	b := a.As16()
	switch {
	case b[0] == 0x20 && b[1] == 0x02:
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0:
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
	}
	return a
}

// spell returns the tiers of a valid, zoneless a: the Host its /host
// (an IPv4 address alone, as Key spells it), the Network its /network
// and the Site its /site (0: ""). The three are spelled into one string:
// this runs on every enter, and three strings were three allocations.
func spell(a netip.Addr, host, network, site int) Tiers {
	var buf [3 * len("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128")]byte
	b := buf[:0]
	if host == a.BitLen() && a.Is4() {
		b = a.AppendTo(b)
	} else {
		b = appendPrefix(b, a, host)
	}
	h := len(b)
	b = appendPrefix(b, a, network)
	n := len(b)
	if site > 0 {
		b = appendPrefix(b, a, site)
	}
	s := string(b)
	return Tiers{Host: s[:h], Network: s[h:n], Site: s[n:]}
}

// appendPrefix appends a's /bits, which cannot fail for a valid, zoneless
// a and bits within its length.
func appendPrefix(b []byte, a netip.Addr, bits int) []byte {
	p, _ := a.Prefix(bits)
	return p.AppendTo(b)
}
