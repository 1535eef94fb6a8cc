package clientip

import "net/netip"

// Tiers are the budgets one client address falls in, narrowest first
// (issue 26.2). A limit kept per address alone is bought cheaply: a home
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
// An IPv4-mapped IPv6 address is its IPv4 address in every tier, and a
// zone is dropped, so neither spelling buys another budget. The zero Addr
// is "unknown" as Host, with no wider tiers. Each tier's key is the
// prefix's canonical form ("192.0.2.0/24", "2001:db8:1:100::/56"), so keys
// of different tiers, and of IPv4 and IPv6, never coincide.
type Tiers struct {
	Host, Network, Site string
}

// TiersOf returns a's tiers.
func TiersOf(a netip.Addr) Tiers {
	a = a.Unmap().WithZone("")
	switch {
	case !a.IsValid():
		return Tiers{Host: "unknown"}
	case a.Is4():
		return Tiers{Host: Key(a), Network: prefix(a, 24)}
	default:
		return Tiers{Host: Key(a), Network: prefix(a, 56), Site: prefix(a, 48)}
	}
}

// prefix is a's /bits, which cannot fail for a valid, zoneless a and bits
// within its length.
func prefix(a netip.Addr, bits int) string {
	p, _ := a.Prefix(bits)
	return p.String()
}
