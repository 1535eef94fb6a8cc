package netclass

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/gaissmai/bart"
)

// Errors a line of a networks file can fail with, inside a *ParseError.
var (
	ErrSyntax   = errors.New("netclass: want \"prefix class\"")
	ErrPrefix   = errors.New("netclass: not a prefix")
	ErrHostBits = errors.New("netclass: prefix has host bits set")
	ErrClass    = errors.New("netclass: unknown class")
	ErrConflict = errors.New("netclass: prefix listed twice with different classes")
	ErrEmbedded = errors.New("netclass: prefix inside a block whose addresses are classed as the IPv4 address they carry")
)

// ParseError names the file and line a networks file failed at.
type ParseError struct {
	File string
	Line int // 1-based; 0 when reading the file failed
	Err  error
}

func (e *ParseError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// The blocks whose addresses carry an IPv4 client (clientip.Embedded):
// a prefix inside one would never be looked up, so listing one is refused.
var (
	sixToFour = netip.MustParsePrefix("2002::/16")
	teredo    = netip.MustParsePrefix("2001::/32")
)

// Parse reads a networks file named name (for errors: "networks.txt:12:
// ..."): one "prefix class" per line, separated by spaces or tabs; "#"
// starts a comment, whole-line or trailing; blank lines are skipped.
//
//   - A prefix is an IPv4 or IPv6 CIDR; a bare address is one host.
//   - A prefix with host bits set (10.0.0.1/8) is refused, not masked: it
//     is most likely a typo for a narrower prefix, and masking it would
//     class a whole /8 quietly.
//   - An IPv4-mapped prefix (::ffff:10.0.0.0/104) is its IPv4 prefix
//     (10.0.0.0/8), since lookups unmap addresses.
//   - A prefix inside 6to4 (2002::/16) or Teredo (2001::/32) is refused:
//     those addresses are classed as the IPv4 they carry; list that.
//   - A prefix listed twice with different classes is refused; listed
//     twice with one class, it counts once.
//
// A prefix may be listed as "default" to carve an ordinary network out of
// a wider classed one: the longest listed prefix wins.
func Parse(r io.Reader, name string) (*Table, error) {
	t := new(Table)
	var trie bart.Table[Class] // while reading: duplicates, and each range's class
	var listed []netip.Prefix
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		p, c, ok, err := parseLine(sc.Text())
		if err != nil {
			return nil, &ParseError{File: name, Line: line, Err: err}
		}
		if !ok {
			continue
		}
		// One walk of the trie finds a listed prefix or inserts a new one.
		var old Class
		var dup bool
		trie.Modify(p, func(o Class, found bool) (Class, bool) {
			if found {
				old, dup = o, true
				return o, false
			}
			return c, false
		})
		if dup && old != c {
			return nil, &ParseError{File: name, Line: line, Err: fmt.Errorf("%w: %s is %s and %s", ErrConflict, p, old, c)}
		}
		if !dup {
			t.sizes[c]++
			listed = append(listed, p)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &ParseError{File: name, Line: line + 1, Err: err}
	}
	t.flatten(&trie, listed)
	return t, nil
}

// flatten turns the listed prefixes into t's ranges: every prefix's first
// address and the address after its last are where the longest prefix
// over an address may change, so the class of each stretch between two
// such edges is the trie's class of its first address; stretches of one
// class are merged.
func (t *Table) flatten(trie *bart.Table[Class], listed []netip.Prefix) {
	var e4 []uint32
	var e6 []uint128
	for _, p := range listed {
		first, last := p.Masked().Addr(), lastAddr(p)
		if first.Is4() {
			e4 = append(e4, v4Of(first))
			if l := v4Of(last); l != ^uint32(0) {
				e4 = append(e4, l+1)
			}
		} else {
			e6 = append(e6, v6Of(first))
			if l := v6Of(last); l != (uint128{^uint64(0), ^uint64(0)}) {
				e6 = append(e6, next128(l))
			}
		}
	}
	class := func(a netip.Addr) Class { c, _ := trie.Lookup(a); return c }
	t.v4 = build(e4, func(a, b uint32) bool { return a < b }, func(x uint32) Class {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], x)
		return class(netip.AddrFrom4(b))
	})
	t.v6 = build(e6, uint128.less, func(x uint128) Class {
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], x.hi)
		binary.BigEndian.PutUint64(b[8:], x.lo)
		return class(netip.AddrFrom16(b))
	})
}

// build sorts the edges (the zero address always one), gives each its
// stretch's class and merges neighbours of one class.
func build[T comparable](edges []T, less func(a, b T) bool, classOf func(T) Class) ranges[T] {
	var zero T
	edges = append(edges, zero)
	sort.Slice(edges, func(i, j int) bool { return less(edges[i], edges[j]) })
	var r ranges[T]
	for i, e := range edges {
		if i > 0 && e == edges[i-1] {
			continue
		}
		c := classOf(e)
		if n := len(r.classes); n > 0 && r.classes[n-1] == c {
			continue
		}
		r.starts, r.classes = append(r.starts, e), append(r.classes, c)
	}
	r.starts, r.classes = slices.Clip(r.starts), slices.Clip(r.classes)
	return r
}

// lastAddr is p's last address.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func next128(x uint128) uint128 {
	if x.lo == ^uint64(0) {
		return uint128{x.hi + 1, 0}
	}
	return uint128{x.hi, x.lo + 1}
}

// parseLine reads one line; ok is false for a blank or comment line.
func parseLine(s string) (p netip.Prefix, c Class, ok bool, err error) {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	pfx, rest := field(s)
	if pfx == "" {
		return p, c, false, nil
	}
	class, rest := field(rest)
	if extra, _ := field(rest); class == "" || extra != "" {
		return p, c, false, fmt.Errorf("%w, got %q", ErrSyntax, strings.TrimSpace(s))
	}
	if p, err = parsePrefix(pfx); err != nil {
		return p, c, false, err
	}
	if c, err = ParseClass(class); err != nil {
		return p, c, false, err
	}
	return p, c, true, nil
}

// field cuts s's first whitespace-separated field from the rest.
func field(s string) (f, rest string) {
	s = strings.TrimLeft(s, " \t\r")
	i := strings.IndexAny(s, " \t\r")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// parsePrefix reads one prefix as Parse documents.
func parsePrefix(s string) (netip.Prefix, error) {
	var p netip.Prefix
	if strings.IndexByte(s, '/') < 0 {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return p, fmt.Errorf("%w: %q", ErrPrefix, s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	} else {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return p, fmt.Errorf("%w: %q", ErrPrefix, s)
		}
	}
	if m := p.Masked(); m != p {
		return p, fmt.Errorf("%w: %s (did you mean %s?)", ErrHostBits, s, m)
	}
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	for _, b := range []netip.Prefix{sixToFour, teredo} {
		if p.Bits() >= b.Bits() && b.Contains(p.Addr()) {
			return p, fmt.Errorf("%w: %s is inside %s; list the IPv4 prefix", ErrEmbedded, p, b)
		}
	}
	return p, nil
}
