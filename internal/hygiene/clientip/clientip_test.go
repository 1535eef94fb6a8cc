package clientip

import (
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"testing/quick"
)

func TestAddr(t *testing.T) {
	r, err := New([]string{"10.0.0.0/8", " 192.0.2.7 ", "", "2001:db8::/32"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"direct client", "203.0.113.9:5000", nil, "203.0.113.9"},
		{"an untrusted peer cannot claim an address", "203.0.113.9:5000", []string{"1.2.3.4"}, "203.0.113.9"},
		{"behind a trusted proxy", "10.1.2.3:80", []string{"198.51.100.4"}, "198.51.100.4"},
		{"read from the right: a spoofed first entry is ignored", "10.1.2.3:80", []string{"1.2.3.4, 198.51.100.4"}, "198.51.100.4"},
		{"two trusted hops", "10.1.2.3:80", []string{"198.51.100.4, 192.0.2.7"}, "198.51.100.4"},
		{"several header lines", "10.1.2.3:80", []string{"1.1.1.1", "198.51.100.4, 10.9.9.9"}, "198.51.100.4"},
		{"only trusted hops: the last one", "10.1.2.3:80", []string{"10.0.0.5"}, "10.0.0.5"},
		{"garbage stops the walk at the last trusted hop", "10.1.2.3:80", []string{"nonsense, 10.0.0.5"}, "10.0.0.5"},
		{"no header behind a trusted proxy: the proxy", "10.1.2.3:80", nil, "10.1.2.3"},
		{"IPv6 peer", "[2001:db8::1]:80", []string{"2001:db9::7"}, "2001:db9::7"},
		{"IPv4-mapped IPv6", "[::ffff:203.0.113.9]:80", nil, "203.0.113.9"},
	} {
		req, _ := http.NewRequest("GET", "/", nil)
		req.RemoteAddr = tc.peer
		for _, v := range tc.xff {
			req.Header.Add("X-Forwarded-For", v)
		}
		if got := r.Addr(req).String(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	none, _ := New(nil)
	req, _ := http.NewRequest("GET", "/", nil)
	req.RemoteAddr = "10.1.2.3:80"
	req.Header.Set("X-Forwarded-For", "1.2.3.4")
	if got := none.Addr(req).String(); got != "10.1.2.3" {
		t.Errorf("no trusted proxies: %s", got)
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "1.2.3"} {
		if _, err := New([]string{bad}); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}

func TestKey(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"::1", "::/64"},
		{"2002:c000:0207:1::1", "192.0.2.7"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdf8", "192.0.2.7"},
	} {
		if got := Key(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("Key(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
	if got := Key(netip.Addr{}); got != "unknown" {
		t.Errorf("Key of the zero Addr = %q, want unknown", got)
	}
}

// Every address of one /64 has the same key, addresses of two /64s have
// different keys, and every IPv4 address is its own key, over generated
// addresses. IPv6 spellings of IPv4 addresses count as IPv4 (TestKey,
// TestEmbedded), so they are skipped here.
func TestKeyGroupsBy64(t *testing.T) {
	// v6 is the address of block (the top 64 bits) and low; ok is false
	// for an IPv6 spelling of an IPv4 address (mapped, 6to4, Teredo),
	// which counts as that IPv4 address (TestEmbedded).
	v6 := func(block, low [8]byte) (a netip.Addr, ok bool) {
		var b [16]byte
		copy(b[:8], block[:])
		copy(b[8:], low[:])
		a = netip.AddrFrom16(b)
		return a, !Embedded(a).Is4()
	}
	sameBlock := func(block, low1, low2 [8]byte) bool {
		a, ok1 := v6(block, low1)
		b, ok2 := v6(block, low2)
		return !ok1 || !ok2 || Key(a) == Key(b)
	}
	otherBlocks := func(block1, block2, low1, low2 [8]byte) bool {
		a, ok1 := v6(block1, low1)
		b, ok2 := v6(block2, low2)
		return !ok1 || !ok2 || block1 == block2 || Key(a) != Key(b)
	}
	v4 := func(a, b [4]byte) bool {
		x, y := netip.AddrFrom4(a), netip.AddrFrom4(b)
		return Key(x) == x.String() && Key(netip.AddrFrom16(x.As16())) == x.String() && (a == b) == (Key(x) == Key(y))
	}
	for name, f := range map[string]any{"same /64": sameBlock, "other /64s": otherBlocks, "IPv4": v4} {
		if err := quick.Check(f, &quick.Config{MaxCount: 10000}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// splitAddr is Addr as it was written first, splitting each header line
// with strings.Split: Addr must agree with it on every header.
func (r *Resolver) splitAddr(req *http.Request) netip.Addr {
	peer := peerAddr(req.RemoteAddr)
	if len(r.trusted) == 0 || !r.isTrusted(peer) {
		return peer
	}
	client := peer
	hops := req.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				return client
			}
			client = a.Unmap()
			if !r.isTrusted(client) {
				return client
			}
		}
	}
	return client
}

func TestAddrAgreesWithSplitting(t *testing.T) {
	r, err := New([]string{"10.0.0.0/8", "2001:db8::/32"})
	if err != nil {
		t.Fatal(err)
	}
	entries := []string{"10.0.0.5", "10.9.9.9", "198.51.100.4", "::ffff:10.1.1.1", "2001:db8::9", "2001:db9::7", "", " ", "x", "1.2.3"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		req, _ := http.NewRequest("GET", "/", nil)
		req.RemoteAddr = "10.1.2.3:80"
		for range rng.IntN(3) {
			var line []string
			for range 1 + rng.IntN(4) {
				line = append(line, strings.Repeat(" ", rng.IntN(2))+entries[rng.IntN(len(entries))])
			}
			req.Header.Add("X-Forwarded-For", strings.Join(line, ","))
		}
		if got, want := r.Addr(req), r.splitAddr(req); got != want {
			t.Fatalf("X-Forwarded-For %q: %v, splitting %v", req.Header.Values("X-Forwarded-For"), got, want)
		}
	}
}

func TestAddrAllocatesNothing(t *testing.T) {
	r, _ := New([]string{"127.0.0.1"})
	req, _ := http.NewRequest("GET", "/", nil)
	req.RemoteAddr = "127.0.0.1:5000"
	req.Header.Set("X-Forwarded-For", "203.0.113.9, 198.51.100.4")
	if allocs := testing.AllocsPerRun(100, func() { r.Addr(req) }); allocs != 0 {
		t.Errorf("%v allocations, want 0", allocs)
	}
}

func TestRanges(t *testing.T) {
	rs, err := ParseRanges([]string{" 192.0.2.0/24", "", "2001:db8:1::/48", "203.0.113.9", "2001:db8:ff::7"})
	if err != nil {
		t.Fatal(err)
	}
	for a, want := range map[string]bool{
		"192.0.2.1": true, "192.0.3.1": false, "::ffff:192.0.2.1": true,
		"203.0.113.9": true, "203.0.113.8": false,
		"2001:db8:1:abcd::1": true, "2001:db8:2::1": false, "2001:db8:ff::7": true, "2001:db8:ff::8": false,
	} {
		if got := rs.Contains(netip.MustParseAddr(a)); got != want {
			t.Errorf("Contains(%s) = %v", a, got)
		}
	}
	if rs.Contains(netip.Addr{}) {
		t.Error("the zero Addr is in a range")
	}
	for _, bad := range []string{"192.0.2.0/33", "office", "2001:db8::/129"} {
		if _, err := ParseRanges([]string{bad}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
