package netclass

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"
)

// Errors Build can fail with, inside a *ParseError naming the input.
var (
	ErrASN   = errors.New("netclass: not an AS number")
	ErrRange = errors.New("netclass: not a range")
)

// Build writes a networks file (Parse) from an ASN class list and
// ip2asn-style range files, the form iptoasn.com publishes:
//
//   - classes: "ASN class" lines (13335 or AS13335, then a class name),
//     "#" comments and blank lines allowed;
//   - ranges: tab-separated "range_start range_end AS_number
//     country_code AS_description" lines, IPv4 or IPv6; AS 0 (not
//     routed) and ASNs the list does not class are skipped.
//
// Each classed range becomes the fewest CIDRs that cover it exactly (a
// range adjoining the previous one of the same class is joined to it
// first), one "prefix class" line each, after a header saying how the
// file was built. Parts inside 6to4 and Teredo are left out, since those
// addresses are classed as the IPv4 they carry. An input that names
// itself (an *os.File) is named in errors.
func Build(w io.Writer, classes io.Reader, ranges ...io.Reader) error {
	asns, err := readASNClasses(classes)
	if err != nil {
		return err
	}
	b := builder{seen: map[netip.Prefix]Class{}}
	nRanges := 0
	for i, r := range ranges {
		name := nameOf(r, fmt.Sprintf("ranges #%d", i+1))
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		line := 0
		for sc.Scan() {
			line++
			from, to, asn, ok, err := parseRange(sc.Text())
			if err != nil {
				return &ParseError{File: name, Line: line, Err: err}
			}
			c, classed := asns[asn]
			if !ok || !classed {
				continue
			}
			nRanges++
			if err := b.add(from, to, c); err != nil {
				return &ParseError{File: name, Line: line, Err: err}
			}
		}
		if err := sc.Err(); err != nil {
			return &ParseError{File: name, Line: line + 1, Err: err}
		}
	}
	if err := b.flush(); err != nil {
		return &ParseError{File: "ranges", Err: err}
	}

	bw := bufio.NewWriter(w)
	var sizes [len(classNames)]int
	for _, e := range b.out {
		sizes[e.class]++
	}
	fmt.Fprintf(bw, "# Network classes for WAITROOM_NETWORKS_FILE, built by `waitroom networks build`\n")
	fmt.Fprintf(bw, "# from %d classed ASNs and %d of their ip2asn ranges: %d prefixes (shared %d, hosting %d, default %d).\n",
		len(asns), nRanges, len(b.out), sizes[Shared], sizes[Hosting], sizes[Default])
	fmt.Fprintf(bw, "# Rebuild it rather than edit it; the longest listed prefix wins.\n")
	for _, e := range b.out {
		fmt.Fprintf(bw, "%s %s\n", e.prefix, e.class)
	}
	return bw.Flush()
}

// nameOf is r's file name, or alt.
func nameOf(r io.Reader, alt string) string {
	if n, ok := r.(interface{ Name() string }); ok {
		return n.Name()
	}
	return alt
}

// readASNClasses reads an ASN class list.
func readASNClasses(r io.Reader) (map[uint32]Class, error) {
	name := nameOf(r, "classes")
	m := map[uint32]Class{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		f := strings.Fields(s)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, &ParseError{File: name, Line: line, Err: fmt.Errorf("want \"ASN class\", got %q", strings.TrimSpace(s))}
		}
		asn, err := parseASN(f[0])
		if err != nil || asn == 0 {
			return nil, &ParseError{File: name, Line: line, Err: fmt.Errorf("%w: %q", ErrASN, f[0])}
		}
		c, err := ParseClass(f[1])
		if err != nil {
			return nil, &ParseError{File: name, Line: line, Err: err}
		}
		if old, dup := m[asn]; dup && old != c {
			return nil, &ParseError{File: name, Line: line, Err: fmt.Errorf("%w: AS%d is %s and %s", ErrConflict, asn, old, c)}
		}
		m[asn] = c
	}
	if err := sc.Err(); err != nil {
		return nil, &ParseError{File: name, Line: line + 1, Err: err}
	}
	return m, nil
}

// parseASN reads "13335" or "AS13335" (any case).
func parseASN(s string) (uint32, error) {
	if len(s) > 2 && strings.EqualFold(s[:2], "as") {
		s = s[2:]
	}
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err
}

// parseRange reads one ip2asn line; ok is false for a blank line or AS 0.
func parseRange(s string) (from, to netip.Addr, asn uint32, ok bool, err error) {
	s = strings.TrimRight(s, "\r")
	if strings.TrimSpace(s) == "" {
		return from, to, 0, false, nil
	}
	f := strings.SplitN(s, "\t", 4)
	if len(f) < 3 {
		return from, to, 0, false, fmt.Errorf("%w: want tab-separated start, end, AS number, got %q", ErrRange, s)
	}
	if from, err = netip.ParseAddr(f[0]); err != nil || from.Zone() != "" {
		return from, to, 0, false, fmt.Errorf("%w: start %q", ErrRange, f[0])
	}
	if to, err = netip.ParseAddr(f[1]); err != nil || to.Zone() != "" {
		return from, to, 0, false, fmt.Errorf("%w: end %q", ErrRange, f[1])
	}
	if from.Is4In6() && to.Is4In6() {
		from, to = from.Unmap(), to.Unmap()
	}
	if from.Is4() != to.Is4() || to.Less(from) {
		return from, to, 0, false, fmt.Errorf("%w: %s to %s", ErrRange, from, to)
	}
	if asn, err = parseASN(f[2]); err != nil {
		return from, to, 0, false, fmt.Errorf("%w: %q", ErrASN, f[2])
	}
	return from, to, asn, asn != 0, nil
}

// builder joins adjoining ranges of one class and splits them into
// prefixes, refusing a prefix classed twice differently.
type builder struct {
	from, to netip.Addr // the range held back to be joined; invalid: none
	class    Class
	seen     map[netip.Prefix]Class
	out      []entry
}

type entry struct {
	prefix netip.Prefix
	class  Class
}

func (b *builder) add(from, to netip.Addr, c Class) error {
	if b.from.IsValid() && c == b.class && from.Is4() == b.to.Is4() && b.to.Next() == from {
		b.to = to
		return nil
	}
	if err := b.flush(); err != nil {
		return err
	}
	b.from, b.to, b.class = from, to, c
	return nil
}

func (b *builder) flush() error {
	if !b.from.IsValid() {
		return nil
	}
	for _, p := range RangePrefixes(b.from, b.to) {
		if inEmbeddedBlock(p) {
			continue
		}
		if old, dup := b.seen[p]; dup {
			if old != b.class {
				return fmt.Errorf("%w: %s is %s and %s (overlapping ranges)", ErrConflict, p, old, b.class)
			}
			continue
		}
		b.seen[p] = b.class
		b.out = append(b.out, entry{p, b.class})
	}
	b.from = netip.Addr{}
	return nil
}

func inEmbeddedBlock(p netip.Prefix) bool {
	return p.Addr().Is6() && (p.Bits() >= sixToFour.Bits() && sixToFour.Contains(p.Addr()) ||
		p.Bits() >= teredo.Bits() && teredo.Contains(p.Addr()))
}

// RangePrefixes returns the fewest prefixes that cover from..to exactly,
// in order; both must be of one family with from not after to.
func RangePrefixes(from, to netip.Addr) []netip.Prefix {
	n := from.BitLen()
	lo, hi := u128Of(from), u128Of(to)
	var out []netip.Prefix
	for {
		// The widest block starting at lo (as many host bits as lo has
		// trailing zeros) that ends within the range.
		h := min(lo.trailingZeros(), n)
		for h > 0 && hi.less(lo.or(ones(h))) {
			h--
		}
		out = append(out, netip.PrefixFrom(lo.addr(n), n-h))
		last := lo.or(ones(h))
		if !last.less(hi) {
			return out
		}
		lo = last.inc()
	}
}

// u128 is an address as a number, for walking a range; an IPv4 address
// sits in the low 32 bits.
type u128 struct{ hi, lo uint64 }

func u128Of(a netip.Addr) u128 {
	if a.Is4() {
		b := a.As4()
		return u128{lo: uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])}
	}
	b := a.As16()
	var u u128
	for i := range 8 {
		u.hi = u.hi<<8 | uint64(b[i])
		u.lo = u.lo<<8 | uint64(b[8+i])
	}
	return u
}

func (u u128) addr(bitLen int) netip.Addr {
	if bitLen == 32 {
		return netip.AddrFrom4([4]byte{byte(u.lo >> 24), byte(u.lo >> 16), byte(u.lo >> 8), byte(u.lo)})
	}
	var b [16]byte
	for i := range 8 {
		b[7-i] = byte(u.hi >> (8 * i))
		b[15-i] = byte(u.lo >> (8 * i))
	}
	return netip.AddrFrom16(b)
}

func (u u128) trailingZeros() int {
	if u.lo != 0 {
		return bits.TrailingZeros64(u.lo)
	}
	return 64 + bits.TrailingZeros64(u.hi) // 128 for zero
}

// ones is the number with the low h bits set.
func ones(h int) u128 {
	switch {
	case h >= 128:
		return u128{^uint64(0), ^uint64(0)}
	case h >= 64:
		return u128{1<<(h-64) - 1, ^uint64(0)}
	default:
		return u128{0, 1<<h - 1}
	}
}

func (u u128) or(v u128) u128 { return u128{u.hi | v.hi, u.lo | v.lo} }

func (u u128) less(v u128) bool { return u.hi < v.hi || u.hi == v.hi && u.lo < v.lo }

func (u u128) inc() u128 {
	if u.lo == ^uint64(0) {
		return u128{u.hi + 1, 0}
	}
	return u128{u.hi, u.lo + 1}
}
