package netclass

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRangePrefixes(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		want     []string
	}{
		{"192.0.2.0", "192.0.2.255", []string{"192.0.2.0/24"}},
		{"192.0.2.7", "192.0.2.7", []string{"192.0.2.7/32"}},
		{"192.0.2.1", "192.0.2.6", []string{"192.0.2.1/32", "192.0.2.2/31", "192.0.2.4/31", "192.0.2.6/32"}},
		{"198.51.100.128", "198.51.101.63", []string{"198.51.100.128/25", "198.51.101.0/26"}},
		{"0.0.0.0", "255.255.255.255", []string{"0.0.0.0/0"}},
		{"255.255.255.254", "255.255.255.255", []string{"255.255.255.254/31"}},
		{"::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", []string{"::/0"}},
		{"2001:db8::", "2001:db8:0:ffff:ffff:ffff:ffff:ffff", []string{"2001:db8::/48"}},
		{"2001:db8::1", "2001:db8::2", []string{"2001:db8::1/128", "2001:db8::2/128"}},
		{"2001:db8::", "2001:db8:1:ffff:ffff:ffff:ffff:fffe", []string{
			"2001:db8::/48", "2001:db8:1::/49", "2001:db8:1:8000::/50", "2001:db8:1:c000::/51", "2001:db8:1:e000::/52",
			"2001:db8:1:f000::/53", "2001:db8:1:f800::/54", "2001:db8:1:fc00::/55", "2001:db8:1:fe00::/56", "2001:db8:1:ff00::/57",
			"2001:db8:1:ff80::/58", "2001:db8:1:ffc0::/59", "2001:db8:1:ffe0::/60", "2001:db8:1:fff0::/61", "2001:db8:1:fff8::/62",
			"2001:db8:1:fffc::/63", "2001:db8:1:fffe::/64", "2001:db8:1:ffff::/65", "2001:db8:1:ffff:8000::/66",
		}},
	} {
		var got []string
		for _, p := range RangePrefixes(netip.MustParseAddr(tc.from), netip.MustParseAddr(tc.to)) {
			got = append(got, p.String())
		}
		if len(tc.want) < 19 && !slices.Equal(got, tc.want) || len(tc.want) == 19 && !slices.Equal(got[:19], tc.want) {
			t.Errorf("%s-%s: %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

// cover is the fewest prefixes covering from..to, the slow way: a block
// inside the range is taken whole, one outside is dropped, and one
// straddling an end is split in halves.
func cover(block netip.Prefix, from, to netip.Addr, out []netip.Prefix) []netip.Prefix {
	first, last := block.Addr(), lastAddr(block)
	switch {
	case last.Less(from) || to.Less(first):
		return out
	case !first.Less(from) && !to.Less(last):
		return append(out, block)
	}
	lo := netip.PrefixFrom(first, block.Bits()+1)
	hi := netip.PrefixFrom(lastAddr(lo).Next(), block.Bits()+1)
	return cover(hi, from, to, cover(lo, from, to, out))
}

// Generated ranges, IPv4 and IPv6, split as the slow cover splits them.
func TestRangePrefixesGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for range 2000 {
		from, to := randAddr(r).Unmap(), randAddr(r).Unmap()
		if from.Is4() != to.Is4() {
			continue
		}
		// Bring them near each other now and then, and onto edges.
		if r.IntN(2) == 0 {
			b := from.AsSlice()
			c := to.AsSlice()
			copy(c, b[:len(b)-1-r.IntN(3)])
			to, _ = netip.AddrFromSlice(c)
		}
		if to.Less(from) {
			from, to = to, from
		}
		got := RangePrefixes(from, to)
		want := cover(netip.PrefixFrom(from, 0).Masked(), from, to, nil)
		if !slices.Equal(got, want) {
			t.Fatalf("%s-%s:\n got %v\nwant %v", from, to, got, want)
		}
	}
}

const classesText = `# ASN class
AS64500 shared   # a carrier
as64501 hosting
64502	shared
64500 shared
`

const rangesText = "192.0.2.0\t192.0.2.127\t64500\tZZ\tCARRIER-A\n" +
	"192.0.2.128\t192.0.2.255\t64500\tZZ\tCARRIER-A\n" + // joined to the line before
	"198.51.100.0\t198.51.100.255\t0\tNone\tNot routed\n" +
	"203.0.113.5\t203.0.113.20\t64501\tZZ\tCLOUD-B\n" +
	"203.0.113.21\t203.0.113.30\t64999\tZZ\tUNCLASSED\n" +
	"\n" +
	"2001:db8::\t2001:db8:ffff:ffff:ffff:ffff:ffff:ffff\t64502\tZZ\tCAMPUS-C\n" +
	"2002::\t2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff\t64501\tZZ\t6TO4-RELAYS\n" +
	"::ffff:192.0.3.0\t::ffff:192.0.3.255\t64501\tZZ\tMAPPED\n"

func TestBuild(t *testing.T) {
	var out strings.Builder
	if err := Build(&out, strings.NewReader(classesText), strings.NewReader(rangesText)); err != nil {
		t.Fatal(err)
	}
	want := "# Network classes for WAITROOM_NETWORKS_FILE, built by `waitroom networks build`\n" +
		"# from 3 classed ASNs and 6 of their ip2asn ranges: 8 prefixes (shared 2, hosting 6, default 0).\n" +
		"# Rebuild it rather than edit it; the longest listed prefix wins.\n" +
		"192.0.2.0/24 shared\n" +
		"203.0.113.5/32 hosting\n203.0.113.6/31 hosting\n203.0.113.8/29 hosting\n203.0.113.16/30 hosting\n203.0.113.20/32 hosting\n" +
		"2001:db8::/32 shared\n" +
		"192.0.3.0/24 hosting\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	tab, err := Parse(strings.NewReader(out.String()), "built")
	if err != nil {
		t.Fatal(err)
	}
	if tab.Lookup(netip.MustParseAddr("203.0.113.21")) != Default || tab.Lookup(netip.MustParseAddr("203.0.113.20")) != Hosting {
		t.Error("the range's ends")
	}
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		classes, ranges string
		want            error
		msg             string
	}{
		{"AS64500 nat\n", "", ErrClass, `classes:1: netclass: unknown class "nat" (want default, shared or hosting)`},
		{"ASX shared\n", "", ErrASN, `classes:1: netclass: not an AS number: "ASX"`},
		{"0 shared\n", "", ErrASN, ""},
		{"64500 shared\n64500 hosting\n", "", ErrConflict, "classes:2: netclass: prefix listed twice with different classes: AS64500 is shared and hosting"},
		{"64500\n", "", nil, `classes:1: want "ASN class", got "64500"`},
		{"64500 shared\n", "192.0.2.0 192.0.2.255 64500\n", ErrRange, ""},
		{"64500 shared\n", "192.0.2.9\t192.0.2.0\t64500\n", ErrRange, "ranges #1:1: netclass: not a range: 192.0.2.9 to 192.0.2.0"},
		{"64500 shared\n", "192.0.2.0\t2001:db8::\t64500\n", ErrRange, ""},
		{"64500 shared\n", "\n192.0.2.0\t192.0.2.255\tAS-X\n", ErrASN, `ranges #1:2: netclass: not an AS number: "AS-X"`},
		{"64500 shared\n64501 hosting\n", "192.0.2.0\t192.0.2.255\t64500\n192.0.2.0\t192.0.2.255\t64501\n", ErrConflict, ""},
	} {
		err := Build(&strings.Builder{}, strings.NewReader(tc.classes), strings.NewReader(tc.ranges))
		var pe *ParseError
		if err == nil || !errors.As(err, &pe) || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%q, %q: %v, want %v in a ParseError", tc.classes, tc.ranges, err, tc.want)
			continue
		}
		if tc.msg != "" && err.Error() != tc.msg {
			t.Errorf("%q, %q:\n got %s\nwant %s", tc.classes, tc.ranges, err, tc.msg)
		}
	}
	// A file names itself in errors.
	path := filepath.Join(t.TempDir(), "v4.tsv")
	if err := os.WriteFile(path, []byte("x\ty\t1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Build(&strings.Builder{}, strings.NewReader(""), f); err == nil || !strings.HasPrefix(err.Error(), path+":1: ") {
		t.Errorf("named file: %v", err)
	}
}

// The samples shipped in deploy/networks: sample-networks.txt is what the
// build command makes of the other two. WAITROOM_UPDATE_DOCS=1 rewrites it.
func TestSamplesAreBuilt(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "deploy", "networks")
	open := func(name string) *os.File {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	var out strings.Builder
	if err := Build(&out, open("sample-asn-classes.txt"), open("sample-ip2asn.tsv")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sample-networks.txt")
	if os.Getenv("WAITROOM_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != out.String() {
		t.Fatalf("%s is not the build command's output; run WAITROOM_UPDATE_DOCS=1 go test -run TestSamplesAreBuilt ./internal/hygiene/netclass/\nwant:\n%s", path, out.String())
	}
	tab, err := Parse(strings.NewReader(out.String()), path)
	if err != nil {
		t.Fatal(err)
	}
	if s := tab.Sizes(); s[Shared] == 0 || s[Hosting] == 0 {
		t.Errorf("the sample lists no shared or no hosting network: %v", s)
	}
}
