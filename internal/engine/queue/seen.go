package queue

import (
	"sync"
	"time"
)

// The networks a line's places came from lately, as this replica saw
// them: what decides whether an enter is its network's first place, free,
// or a later one, priced by the places the network holds (price.go).
//
// It is kept here, not in Redis. Asking Redis cost every enter of a crowd
// (where nearly every enter is its network's first place) two reads of
// a filter per network and window and a write, inside enter.lua: 15–19 µs
// of Redis CPU an enter, more than the rest of the enter together (docs/
// perf-log/people-first.md). Asked here, a first place costs a lookup of
// well under a microsecond and no Redis work at all; only a network this
// replica has placed someone from lately goes through the price in
// enter.lua, which counts its places in its ZSET as before.
//
// The cost of that: the first place a network makes through each replica
// is free, so a network spreading its enters over R replicas gets up to R
// free places in a window instead of one (the rate limits' local stage,
// local.go, makes the same trade), and a replica that restarts has
// forgotten the networks it saw. Every later place of the network through
// a replica pays, counted over all replicas in Redis.
//
// A line's filter is two windows of seenWindow (the current one and the
// last), each a blocked Bloom filter of seenShards × seenBlocks 32-bit
// blocks in which a network sets seenProbes bits of one block; a shard's
// blocks are allocated when the first network lands in it (32 KiB), so a
// quiet line holds little. With a million networks in a window, about
// 0.05 % of first places find all their bits set by others and pay a
// second place's price (TestSeenFilterFalsePositives).
type seenFilter struct {
	mu sync.Mutex
	// batch are the networks (hashes) a batch met first, for the calls
	// after them: kept and cleared, not made anew for each batch.
	batch  map[uint64]bool
	window int64                           // the current window's number
	cur    [seenShards]*[seenBlocks]uint32 // this window's blocks
	prev   [seenShards]*[seenBlocks]uint32 // the last window's
}

// seenSlot is where the bits of a network of hash h (seenHash) are: its
// shard, its block and the seenProbes bits it sets there.
func seenSlot(h uint64) (shard, block int, mask uint32) {
	shard = int(h % seenShards)
	block = int((h / seenShards) % seenBlocks)
	rest := h / (seenShards * seenBlocks)
	for range seenProbes {
		mask |= 1 << (rest % 32)
		rest /= 32
	}
	return shard, block, mask
}

// rotate moves the windows on to now's. f.mu must be held.
func (f *seenFilter) rotate(now time.Time) {
	w := now.UnixMilli() / seenWindow.Milliseconds()
	switch {
	case w == f.window:
		return
	case w == f.window+1:
		f.prev, f.cur = f.cur, [seenShards]*[seenBlocks]uint32{}
	default: // a replica idle for two windows, or the first use
		f.prev, f.cur = [seenShards]*[seenBlocks]uint32{}, [seenShards]*[seenBlocks]uint32{}
	}
	f.window = w
}

// has reports whether the network of hash h placed someone through this
// replica in this window or the last. f.mu must be held.
func (f *seenFilter) has(h uint64) bool {
	shard, block, mask := seenSlot(h)
	for _, w := range [2]*[seenBlocks]uint32{f.cur[shard], f.prev[shard]} {
		if w != nil && w[block]&mask == mask {
			return true
		}
	}
	return false
}

// add records that the network of hash h placed someone now. f.mu must
// be held.
func (f *seenFilter) add(h uint64) {
	shard, block, mask := seenSlot(h)
	if f.cur[shard] == nil {
		f.cur[shard] = new([seenBlocks]uint32)
	}
	f.cur[shard][block] |= mask
}

// look sets, for each call priced by its networks, which of its networks
// placed someone lately (Caller.seen): none, and the call is its
// networks' first place, free, and costs enter.lua no price work. A
// network met first in this batch counts as seen for the calls after it,
// so that a batch of one network's enters pays as one after another.
func (f *seenFilter) look(calls []Caller, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rotate(now)
	if f.batch == nil {
		f.batch = make(map[uint64]bool)
	}
	clear(f.batch)
	for i := range calls {
		c := &calls[i]
		if c.Pricing != PriceByNetwork || c.Networks[0] == "" {
			continue
		}
		for k, n := range c.Networks {
			if n != "" {
				c.netHash[k] = seenHash(n)
				c.seen[k] = f.batch[c.netHash[k]] || f.has(c.netHash[k])
			}
		}
		if c.seen == [2]bool{} {
			c.first = true
			for k, n := range c.Networks {
				if n != "" {
					f.batch[c.netHash[k]] = true
				}
			}
		}
	}
}

// placed records the networks of each call priced by them that took a
// place in the line (waiting, or in a draw): what the price counts, as
// enter.lua counts a network's later places. One admitted at once holds
// no place in the line, and an account's place or a hosting network's
// counts nothing towards its network's price.
func (f *seenFilter) placed(calls []Caller, tickets []Ticket, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rotate(now)
	for i, c := range calls {
		if i >= len(tickets) || tickets[i].refused != nil || tickets[i].Status != Waiting || c.Pricing != PriceByNetwork || c.Networks[0] == "" {
			continue
		}
		for k, n := range c.Networks {
			if n != "" {
				f.add(c.netHash[k]) // look's
			}
		}
	}
}

// seenOne is look for a single caller that makes no place (the challenge
// endpoint): which of its networks placed someone lately.
func (f *seenFilter) seenOne(c *Caller, now time.Time) {
	calls := []Caller{*c}
	f.look(calls, now)
	c.seen, c.first = calls[0].seen, calls[0].first
}
