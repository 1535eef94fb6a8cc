package queue

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// The replica's filter: a network's first place is free, a later call of
// it (in the same batch too) is not; a refused call records nothing; a
// network is remembered for this window and the next, then forgotten.
func TestSeenFilter(t *testing.T) {
	var f seenFilter
	now := time.UnixMilli(10 * seenWindow.Milliseconds())
	net := func(i int) [2]string {
		return [2]string{fmt.Sprintf("2001:db8:%x::/56", i), fmt.Sprintf("2001:db8:%x::/48", i)}
	}
	calls := []Caller{{Networks: net(1)}, {Networks: net(2)}, {Networks: net(1)}, {Networks: net(3), Pricing: PriceNone}}
	f.look(calls, now)
	if !calls[0].first || !calls[1].first || calls[2].first || calls[2].seen != [2]bool{true, true} || calls[3].first {
		t.Fatalf("first, seen: %v %v, %v %v, %v %v, %v", calls[0].first, calls[0].seen, calls[1].first, calls[1].seen, calls[2].first, calls[2].seen, calls[3].first)
	}
	w := Ticket{Status: Waiting}
	f.placed(calls, []Ticket{w, {Status: Waiting, refused: ErrRateLimited}, w, w}, now)
	for i, want := range map[int]bool{1: true, 2: false, 3: false} { // 3: an account's place counts nothing
		c := Caller{Networks: net(i)}
		f.seenOne(&c, now)
		if c.first == want {
			t.Errorf("network %d: first %v after the batch, want %v", i, c.first, !want)
		}
	}
	// A site seen, its network not: priced (the site counts), network unseen.
	c := Caller{Networks: [2]string{"2001:db8:1:ff00::/56", net(1)[1]}}
	f.seenOne(&c, now)
	if c.first || c.seen != [2]bool{false, true} {
		t.Fatalf("a new /56 of a seen /48: first %v seen %v", c.first, c.seen)
	}
	next := now.Add(seenWindow)
	c = Caller{Networks: net(1)}
	if f.seenOne(&c, next); c.first {
		t.Fatal("forgotten in the next window")
	}
	c = Caller{Networks: net(1)}
	if f.seenOne(&c, next.Add(seenWindow)); !c.first {
		t.Fatal("still remembered two windows on")
	}
}

// The filter misprices about 0.05 % of first places, under 0.1 %, with a
// million networks in each of the two windows read (one bit per network
// made it about 6 % in one window).
func TestSeenFilterFalsePositives(t *testing.T) {
	var f seenFilter
	now := time.UnixMilli(10 * seenWindow.Milliseconds())
	const perWindow, probes = 1_000_000, 100_000
	var buf []byte
	network := func(window, i int) string {
		buf = strconv.AppendInt(append(strconv.AppendInt(append(buf[:0], 'w'), int64(window), 10), ':'), int64(i), 10)
		return string(buf)
	}
	for w := range 2 {
		f.rotate(now.Add(time.Duration(w) * seenWindow))
		for i := range perWindow {
			f.add(seenHash(network(w, i)))
		}
	}
	found := 0
	for i := range probes {
		if f.has(seenHash(network(9, i))) {
			found++
		}
	}
	rate := float64(found) / probes
	t.Logf("%d of %d unseen networks read as seen with %d networks in each window: %.4f %%", found, probes, perWindow, 100*rate)
	if rate > 0.001 {
		t.Fatalf("false positives %.4f %%, want ≤ 0.1 %%", 100*rate)
	}
}

// What the filter costs an enter: a look and a record of a batch of 32
// first places (a /56 and a /48 each), per call, with the last window
// holding a million networks.
func BenchmarkSeenFilter(b *testing.B) {
	var f seenFilter
	now := time.Now()
	const pool = 1 << 16
	nets := make([][2]string, pool)
	for i := range nets {
		site := "2001:" + strconv.Itoa(i) + "::"
		nets[i] = [2]string{site + "/56", site + "/48"}
	}
	calls := make([]Caller, 32)
	tickets := make([]Ticket, 32)
	for k := range tickets {
		tickets[k].Status = Waiting
	}
	// The last window full of other networks, as in a crowd: both
	// windows' blocks are read for every network.
	before := now.Add(-seenWindow)
	for i := 0; i < 1<<20; i += len(calls) {
		for k := range calls {
			calls[k] = Caller{Networks: [2]string{"2001:db8:" + strconv.Itoa(i+k) + "::/56", "2001:db8:" + strconv.Itoa(i+k) + "::/48"}}
		}
		f.look(calls, before)
		f.placed(calls, tickets, before)
	}
	i := 0
	for b.Loop() {
		for k := range calls {
			calls[k] = Caller{Networks: nets[i%pool]}
			i++
		}
		f.look(calls, now)
		f.placed(calls, tickets, now)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(calls)), "ns/call")
}
