// Package clientip tells which address a request came from, and names the
// client's budget (Key), for limits kept per client (rate limits, the admin
// lockout). The peer's address is
// the client's unless the peer is one of the operator's trusted proxies
// (WAITROOM_TRUSTED_PROXIES): then X-Forwarded-For is read from the right,
// skipping trusted hops, and the first untrusted address is the client.
// Reading it from the left, or from an untrusted peer, would let any
// client choose its own address and so its own rate-limit bucket.
package clientip

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Resolver finds a request's client address.
type Resolver struct {
	trusted Ranges
}

// New returns a Resolver trusting the proxies in cidrs ("10.0.0.0/8",
// "192.0.2.7"; a bare address is one host). None: the peer is the client.
func New(cidrs []string) (*Resolver, error) {
	trusted, err := ParseRanges(cidrs)
	if err != nil {
		return nil, err
	}
	return &Resolver{trusted: trusted}, nil
}

// Ranges are address ranges: the trusted proxies, or the clients the gate
// lets through without a pass (WAITROOM_GATE_BYPASS_CIDRS).
type Ranges []netip.Prefix

// ParseRanges reads cidrs ("10.0.0.0/8", "2001:db8::/32", "192.0.2.7"; a
// bare address is one host), skipping empty entries and trimming the
// others.
func ParseRanges(cidrs []string) (Ranges, error) {
	var rs Ranges
	for _, c := range cidrs {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if !strings.Contains(c, "/") {
			a, err := netip.ParseAddr(c)
			if err != nil {
				return nil, fmt.Errorf("clientip: %q is not an address or CIDR", c)
			}
			c = netip.PrefixFrom(a, a.BitLen()).String()
		}
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("clientip: %q is not an address or CIDR", c)
		}
		rs = append(rs, p.Masked())
	}
	return rs, nil
}

// Contains reports whether a is in one of the ranges; an IPv4-mapped IPv6
// address counts as its IPv4 address. The zero Addr is in none.
func (rs Ranges) Contains(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range rs {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Addr returns the client's address: the peer's, or behind trusted
// proxies the last address in X-Forwarded-For that is not a trusted proxy.
// A header that cannot be read stops the walk at the last trusted hop,
// which is then taken as the client (it is what the proxy saw).
func (r *Resolver) Addr(req *http.Request) netip.Addr {
	peer := peerAddr(req.RemoteAddr)
	if len(r.trusted) == 0 || !r.isTrusted(peer) {
		return peer
	}
	client := peer
	hops := req.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		// The line's comma-separated entries from the right, without
		// splitting it into a slice: every request behind a proxy asks.
		rest := hops[i]
		for {
			j := strings.LastIndexByte(rest, ',') // -1: the first entry
			a, err := netip.ParseAddr(strings.TrimSpace(rest[j+1:]))
			if err != nil {
				return client
			}
			client = a.Unmap()
			if !r.isTrusted(client) {
				return client
			}
			if j < 0 {
				break
			}
			rest = rest[:j]
		}
	}
	return client
}

func (r *Resolver) isTrusted(a netip.Addr) bool { return r.trusted.Contains(a) }

// Key names a's budget in every per-client limit: an IPv4 address as it
// is (an IPv6 spelling of one, mapped, 6to4 or Teredo, as that IPv4:
// Embedded), an IPv6 address as its /64, the
// block one subscriber usually gets, so that walking the block's 2^64
// addresses does not buy fresh budgets. The zero Addr (a peer that could
// not be read) is "unknown", one budget for all such. Never empty.
func Key(a netip.Addr) string {
	a = Embedded(a)
	switch {
	case !a.IsValid():
		return "unknown"
	case a.Is6():
		p, _ := a.Prefix(64) // cannot fail for a valid IPv6 address; drops a zone
		return p.String()
	default:
		return a.String()
	}
}

// peerAddr parses http.Request.RemoteAddr ("ip:port"); an unreadable one
// (a test's, a Unix socket's) is the zero Addr, one bucket for all such.
func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}
