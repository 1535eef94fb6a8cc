package netclass

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

const sample = `# carriers
203.0.113.0/24   shared   # a carrier's NAT pool
203.0.113.128/25 default  # its office, an ordinary network
198.51.100.0/22	hosting
198.51.100.7 shared
2001:db8::/32 shared
2001:db8:ff::/48 hosting

::ffff:192.0.2.0/120 hosting
203.0.113.0/24 shared
`

func TestParse(t *testing.T) {
	tab, err := Parse(strings.NewReader(sample), "networks.txt")
	if err != nil {
		t.Fatal(err)
	}
	for a, want := range map[string]Class{
		"203.0.113.9":                 Shared,
		"::ffff:203.0.113.9":          Shared,
		"203.0.113.200":               Default,
		"198.51.100.1":                Hosting,
		"198.51.103.255":              Hosting,
		"198.51.104.0":                Default,
		"198.51.100.7":                Shared,
		"192.0.2.1":                   Hosting,
		"2001:db8:1::1":               Shared,
		"2001:db8:ff:1::1":            Hosting,
		"2001:db9::1":                 Default,
		"10.0.0.1":                    Default,
		"2002:cb00:7109::1":           Shared, // 6to4 of 203.0.113.9
		"2001:0:4136:e378::34ff:8ef6": Shared, // Teredo of 203.0.113.9
		"fe80::1%eth0":                Default,
	} {
		if got := tab.Lookup(netip.MustParseAddr(a)); got != want {
			t.Errorf("Lookup(%s) = %s, want %s", a, got, want)
		}
	}
	if got := tab.Lookup(netip.Addr{}); got != Default {
		t.Errorf("Lookup of the zero Addr = %s", got)
	}
	if tab.Len() != 7 {
		t.Errorf("Len = %d, want 7 (a repeated line counts once)", tab.Len())
	}
	want := map[Class]int{Default: 1, Shared: 3, Hosting: 3}
	if got := tab.Sizes(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Sizes = %v, want %v", got, want)
	}
}

func TestNilTable(t *testing.T) {
	var tab *Table
	if tab.Lookup(netip.MustParseAddr("192.0.2.1")) != Default || tab.Len() != 0 || tab.Sizes()[Shared] != 0 {
		t.Error("a nil table lists something")
	}
	var w *Watcher
	if w.Table() != nil {
		t.Error("a nil watcher has a table")
	}
}

func TestClass(t *testing.T) {
	for _, c := range Classes {
		got, err := ParseClass(c.String())
		if err != nil || got != c {
			t.Errorf("ParseClass(%q) = %v, %v", c.String(), got, err)
		}
	}
	for _, bad := range []string{"", "Shared", "nat", "hosting "} {
		if _, err := ParseClass(bad); !errors.Is(err, ErrClass) {
			t.Errorf("ParseClass(%q): %v", bad, err)
		}
	}
	if Class(9).String() != "class(9)" {
		t.Error(Class(9).String())
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		file string
		want error
		msg  string
	}{
		{"10.0.0.0/8 shared\n10.0.0.1/8 hosting\n", ErrHostBits, "networks.txt:2: netclass: prefix has host bits set: 10.0.0.1/8 (did you mean 10.0.0.0/8?)"},
		{"# one\n\n10.0.0.0/8\n", ErrSyntax, `networks.txt:3: netclass: want "prefix class", got "10.0.0.0/8"`},
		{"10.0.0.0/8 shared extra\n", ErrSyntax, ""},
		{"10.0.0.0/33 shared\n", ErrPrefix, ""},
		{"fe80::1%eth0 shared\n", ErrPrefix, ""},
		{"example.com shared\n", ErrPrefix, ""},
		{"10.0.0.0/8 nat\n", ErrClass, `networks.txt:1: netclass: unknown class "nat" (want default, shared or hosting)`},
		{"10.0.0.0/8 shared\n::ffff:10.0.0.0/104 hosting\n", ErrConflict, "networks.txt:2: netclass: prefix listed twice with different classes: 10.0.0.0/8 is shared and hosting"},
		{"2002:c000:200::/40 shared\n", ErrEmbedded, ""},
		{"2001:0:1::/48 shared\n", ErrEmbedded, ""},
	} {
		_, err := Parse(strings.NewReader(tc.file), "networks.txt")
		var pe *ParseError
		if !errors.Is(err, tc.want) || !errors.As(err, &pe) || pe.File != "networks.txt" {
			t.Errorf("%q: %v, want %v in a ParseError", tc.file, err, tc.want)
			continue
		}
		if tc.msg != "" && err.Error() != tc.msg {
			t.Errorf("%q:\n got %s\nwant %s", tc.file, err, tc.msg)
		}
	}
	// Wider than the blocks, a prefix is fine: it classes the rest.
	if _, err := Parse(strings.NewReader("2000::/3 hosting\n2001::/31 shared\n"), "n"); err != nil {
		t.Error(err)
	}
	long := strings.Repeat("x", 2*1024*1024)
	if _, err := Parse(strings.NewReader("10.0.0.0/8 shared\n"+long), "n"); err == nil || !strings.HasPrefix(err.Error(), "n:2: ") {
		t.Errorf("an overlong line: %v", err)
	}
}

// listed is a prefix with its class, for the naive matcher.
type listed struct {
	p netip.Prefix
	c Class
}

// naiveLookup is the longest-prefix match by walking every prefix.
func naiveLookup(ps []listed, a netip.Addr) Class {
	a = embedded(a)
	best, c := -1, Default
	for _, l := range ps {
		if l.p.Contains(a) && l.p.Bits() > best {
			best, c = l.p.Bits(), l.c
		}
	}
	return c
}

// embedded is clientip.Embedded written out again, so that the test does
// not only check the code against itself.
func embedded(a netip.Addr) netip.Addr {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		b := a.As16()
		if b[0] == 0x20 && b[1] == 0x02 {
			return netip.AddrFrom4([4]byte(b[2:6]))
		}
		if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0 {
			return netip.AddrFrom4([4]byte{b[12] ^ 0xff, b[13] ^ 0xff, b[14] ^ 0xff, b[15] ^ 0xff})
		}
	}
	return a
}

// randAddr is an address near one of a few bases, so that generated
// prefixes nest and addresses fall in them often.
func randAddr(r *rand.Rand) netip.Addr {
	bases := []string{"10.0.0.0", "203.0.113.0", "2001:db8::", "2400:cb00::", "2002:cb00:7100::", "2001::"}
	b := netip.MustParseAddr(bases[r.IntN(len(bases))])
	s := b.AsSlice()
	for i := len(s) / 4; i < len(s); i++ { // keep the first quarter
		if r.IntN(3) > 0 {
			s[i] = byte(r.UintN(256))
		}
	}
	a, _ := netip.AddrFromSlice(s)
	switch r.IntN(8) {
	case 0:
		if a.Is4() {
			return netip.AddrFrom16(a.As16()) // mapped
		}
	case 1:
		if a.Is4() { // its 6to4 spelling
			v := a.As4()
			return netip.AddrFrom16([16]byte{0x20, 0x02, v[0], v[1], v[2], v[3], 1, 2, 3})
		}
	}
	return a
}

// Generated tables and addresses, compared with a linear match.
func TestLookupGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for round := range 20 {
		var ps []listed
		var text strings.Builder
		have := map[netip.Prefix]Class{}
		for range 1 + r.IntN(300) {
			a := randAddr(r).Unmap()
			if a.Is4In6() {
				continue
			}
			p, _ := a.Prefix(r.IntN(a.BitLen() + 1))
			if inEmbeddedBlock(p) {
				continue
			}
			c := Classes[r.IntN(len(Classes))]
			if old, dup := have[p]; dup && old != c {
				continue
			}
			have[p] = c
			ps = append(ps, listed{p, c})
			fmt.Fprintf(&text, "%s %s # round %d\n", p, c, round)
		}
		tab, err := Parse(strings.NewReader(text.String()), "gen")
		if err != nil {
			t.Fatal(err)
		}
		if tab.Len() != len(have) {
			t.Fatalf("Len %d, want %d", tab.Len(), len(have))
		}
		for range 3000 {
			a := randAddr(r)
			if got, want := tab.Lookup(a), naiveLookup(ps, a); got != want {
				t.Fatalf("round %d: Lookup(%s) = %s, linear match %s", round, a, got, want)
			}
		}
		for _, l := range ps { // each prefix's first address, the edge
			if got, want := tab.Lookup(l.p.Addr()), naiveLookup(ps, l.p.Addr()); got != want {
				t.Fatalf("round %d: Lookup(%s) = %s, linear match %s", round, l.p.Addr(), got, want)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("10.0.0.0/8 shared\n10.1.0.0/16 hosting\n10.1.2.0/24 default\n")
	f.Add("::/0 hosting\n0.0.0.0/0 shared # all\n")
	f.Add("2000::/3 hosting\n2001::/31 shared\n::ffff:0.0.0.0/96 shared\n")
	f.Add("10.0.0.1/8 shared\n")
	f.Add("\t192.0.2.1\tshared\r\n#\n")
	f.Fuzz(func(t *testing.T, text string) {
		tab, err := Parse(strings.NewReader(text), "fuzz")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "fuzz" || pe.Line < 1 || !strings.HasPrefix(err.Error(), fmt.Sprintf("fuzz:%d: ", pe.Line)) {
				t.Fatalf("error not naming file and line: %v", err)
			}
			return
		}
		// Every listed prefix, read back the way Parse reads it.
		var ps []listed
		for line := range strings.SplitSeq(text, "\n") {
			p, c, ok, err := parseLine(line)
			if err != nil {
				t.Fatalf("Parse accepted %q: %v", line, err)
			}
			if ok {
				ps = append(ps, listed{p, c})
			}
		}
		total := 0
		for _, n := range tab.Sizes() {
			total += n
		}
		if total != tab.Len() {
			t.Fatalf("Sizes add to %d, Len %d", total, tab.Len())
		}
		for _, l := range ps {
			a := l.p.Addr()
			got, want := tab.Lookup(a), naiveLookup(ps, a)
			if got != want {
				t.Fatalf("Lookup(%s) = %s, linear match %s", a, got, want)
			}
			if embedded(a) == a && got != l.c {
				// Only a longer listed prefix may class it otherwise.
				longer := false
				for _, m := range ps {
					longer = longer || m.p.Bits() > l.p.Bits() && m.p.Contains(a)
				}
				if !longer {
					t.Fatalf("%s listed %s looks up %s", l.p, l.c, got)
				}
			}
		}
	})
}

// millionLines writes n generated "prefix class" lines, IPv4 and IPv6
// alike, all distinct, to a file in dir.
func millionLines(tb testing.TB, dir string, n int) string {
	tb.Helper()
	path := filepath.Join(dir, "networks.txt")
	var b strings.Builder
	b.Grow(n * 30)
	b.WriteString("# generated\n")
	for i := range n {
		c := Classes[1+i%2]
		if i%4 == 3 {
			fmt.Fprintf(&b, "2400:%x:%x::/48 %s\n", i>>16, i&0xffff, c)
		} else {
			v := uint32(i) << 8
			fmt.Fprintf(&b, "%d.%d.%d.0/24 %s\n", 1+v>>24, byte(v>>16), byte(v>>8), c)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func TestParseMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and loads a 1,000,000-line file")
	}
	path := millionLines(t, t.TempDir(), 1_000_000)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	tab, err := Parse(f, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %d prefixes in %v", tab.Len(), time.Since(start)) // a figure, not a check
	if tab.Len() != 1_000_000 {
		t.Fatalf("Len %d", tab.Len())
	}
	if got := tab.Lookup(netip.MustParseAddr("1.0.1.9")); got != Hosting {
		t.Errorf("1.0.1.9: %s", got)
	}
}

func BenchmarkParse1M(b *testing.B) {
	path := millionLines(b, b.TempDir(), 1_000_000)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	before := cpuTime()
	for b.Loop() {
		if _, err := Parse(strings.NewReader(string(data)), "bench"); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, before)
}

func BenchmarkLookup1M(b *testing.B) {
	path := millionLines(b, b.TempDir(), 1_000_000)
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	tab, err := Parse(f, path)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	addrs := make([]netip.Addr, 4096)
	for i := range addrs {
		if i%2 == 0 {
			addrs[i] = netip.AddrFrom4([4]byte{byte(1 + r.IntN(15)), byte(r.UintN(256)), byte(r.UintN(256)), byte(r.UintN(256))})
		} else {
			addrs[i] = netip.AddrFrom16([16]byte{0x24, 0, 0, byte(r.IntN(16)), byte(r.UintN(256)), byte(r.UintN(256)), 9, 9, 1})
		}
	}
	runtime.GC() // the setup's garbage, collected before the clock starts
	i := 0
	before := cpuTime()
	for b.Loop() {
		tab.Lookup(addrs[i&4095])
		i++
	}
	reportCPU(b, before)
}

// BenchmarkLookupSmall looks up in a table that stays in the CPU's cache,
// beside BenchmarkLookup1M, whose cost is mostly memory reads.
func BenchmarkLookupSmall(b *testing.B) {
	tab, err := Parse(strings.NewReader(sample), "sample")
	if err != nil {
		b.Fatal(err)
	}
	addrs := []netip.Addr{netip.MustParseAddr("203.0.113.9"), netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("2001:db8:ff:1::1"), netip.MustParseAddr("10.0.0.1")}
	i := 0
	before := cpuTime()
	for b.Loop() {
		tab.Lookup(addrs[i&3])
		i++
	}
	reportCPU(b, before)
}

// A shared network's clients count per address, the others per network,
// and a nil table is the default class for all.
func TestTiersByClass(t *testing.T) {
	tb, err := Parse(strings.NewReader("198.51.100.0/24 shared\n203.0.113.0/24 hosting\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr  string
		table *Table
		class Class
		net   string
	}{
		{"198.51.100.7", tb, Shared, "198.51.100.7/32"},
		{"203.0.113.7", tb, Hosting, "203.0.113.0/24"},
		{"192.0.2.7", tb, Default, "192.0.2.0/24"},
		{"198.51.100.7", nil, Default, "198.51.100.0/24"},
	} {
		tiers, c := tc.table.Tiers(netip.MustParseAddr(tc.addr))
		if c != tc.class || tiers.Network != tc.net {
			t.Errorf("%s: %v %+v, want %v and network %s", tc.addr, c, tiers, tc.class, tc.net)
		}
	}
}
