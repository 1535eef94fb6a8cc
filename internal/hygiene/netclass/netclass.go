// Package netclass owns the operator's table of network classes: which
// client networks are shared by many people (carrier NAT, mobile carriers,
// campuses) and which are hosting (data centres, VPN exits), so that the
// price of a place and the network limits can treat them apart from an
// ordinary subscriber's network. A crowd behind one carrier's NAT shares a
// /24 by the thousand; priced per /24, each person would pay for the
// places of their neighbours.
//
// The table is a file of "prefix class" lines (Parse, deploy/networks/
// README.md), built from public ASN data by `waitroom networks build`
// (Build) and reloaded while the room runs (Watch).
package netclass

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sort"

	"github.com/waitroom/waitroom/internal/hygiene/clientip"
)

// Class is what the operator says a network is.
type Class uint8

const (
	// Default is a network the table does not list: one subscriber or
	// office, priced and limited per /24 (IPv4) or /56 (IPv6).
	Default Class = iota
	// Shared is a network many people share (carrier NAT, a mobile
	// carrier, a campus): priced and limited per address.
	Shared
	// Hosting is a data centre or VPN exit, where a person rarely sits
	// and a bot farm rents its addresses.
	Hosting
)

// Classes lists every class, in order: for a gauge per class.
var Classes = []Class{Default, Shared, Hosting}

var classNames = [...]string{Default: "default", Shared: "shared", Hosting: "hosting"}

// String is the class's name in the file: "default", "shared", "hosting".
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// ParseClass reads a class's name as String writes it.
func ParseClass(s string) (Class, error) {
	for c, name := range classNames {
		if s == name {
			return Class(c), nil
		}
	}
	return Default, fmt.Errorf("%w %q (want default, shared or hosting)", ErrClass, s)
}

// Table maps client networks to classes; the longest listed prefix
// containing an address wins. It is read-only once parsed, so any number
// of goroutines may look up at once. A nil *Table lists nothing.
//
// The prefixes are flattened when the file is read into sorted, disjoint
// ranges of addresses, each with the class of the longest prefix over it,
// and a lookup is a binary search. The ranges hold no pointers, so the
// garbage collector never walks them: a million prefixes kept as a trie
// made every enter 12–18 % dearer in server CPU, through the collector's
// scans of the trie, though a lookup itself took 300 ns.
type Table struct {
	v4    ranges[uint32]
	v6    ranges[uint128]
	sizes [len(classNames)]int
}

// uint128 is an IPv6 address as a number, hi first.
type uint128 struct{ hi, lo uint64 }

func (a uint128) less(b uint128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

// ranges are classes over the whole address space: starts[i] is the
// first address with classes[i], up to the next start; starts[0] is 0.
type ranges[T any] struct {
	starts  []T
	classes []Class
}

// Lookup returns the class of the longest listed prefix containing a, or
// Default. An IPv6 spelling of an IPv4 address (mapped, 6to4, Teredo) is
// looked up as that IPv4 address (clientip.Embedded), as it is priced.
func (t *Table) Lookup(a netip.Addr) Class {
	if t == nil {
		return Default
	}
	a = clientip.Embedded(a)
	switch {
	case a.Is4():
		x := v4Of(a)
		return t.v4.find(func(s uint32) bool { return s > x })
	case a.Is6():
		x := v6Of(a)
		return t.v6.find(func(s uint128) bool { return x.less(s) })
	}
	return Default
}

// find is the class of the last range whose start is not after the
// address (after reports a start past it).
func (r ranges[T]) find(after func(T) bool) Class {
	i := sort.Search(len(r.starts), func(i int) bool { return after(r.starts[i]) })
	if i == 0 {
		return Default
	}
	return r.classes[i-1]
}

func v4Of(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func v6Of(a netip.Addr) uint128 {
	b := a.As16()
	return uint128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// Len is the number of prefixes listed.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	n := 0
	for _, c := range t.sizes {
		n += c
	}
	return n
}

// Sizes returns the number of prefixes listed per class, every class
// present (0 for none).
func (t *Table) Sizes() map[Class]int {
	m := make(map[Class]int, len(Classes))
	for _, c := range Classes {
		if t != nil {
			m[c] = t.sizes[c]
		} else {
			m[c] = 0
		}
	}
	return m
}

// Tiers are the budgets a's client counts in, by its class: a Shared
// network's people each count as their own address (clientip.AddressTiers),
// never as the /24 or /56 they share with thousands of others; any other
// class as its networks (clientip.TiersOf). Both the limits of a
// network's tier and the price of a place follow them.
func (t *Table) Tiers(a netip.Addr) (clientip.Tiers, Class) {
	c := t.Lookup(a)
	if c == Shared {
		return clientip.AddressTiers(a), c
	}
	return clientip.TiersOf(a), c
}
