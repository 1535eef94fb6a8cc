package queue

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// A credential carries the arrival number of the place it was issued for
// (Caller.Seq). After a leave, a removal or a re-entry that number no
// longer names the user's place, but the snapshot, which only knows the
// line's shape, would still answer it WAITING at the old, better position.
// So leave.lua and enter.lua record, per user, the highest
// arrival number of its credentials that went stale (the stale ZSET);
// each replica reads what was recorded since its last read with every
// snapshot (snapshot.lua), keeps it in a staleSet, and sends such a
// credential's status to Redis, which answers it exactly: NOT_WAITING
// with the reason, or the user's newest place.
//
// An entry is needed only while the head of the line has not passed it: a
// credential whose number is below the head is never answered from the
// snapshot. So the set forgets entries the head passed (and tick.lua
// trims the ZSET likewise), and its size is bounded by the leaves and
// re-entries of the places still in line, capped at staleMax: past the
// cap an entry is not kept, and every far-back status goes to Redis until
// the head has passed the highest one not kept.

// staleMax caps a queue's staleSet (about 80 bytes an entry).
const staleMax = 1 << 18

// stalePage and stalePages bound one refresh's reading of the stale ZSET:
// a page per snapshot.lua call, at most stalePages calls. A replica that
// could not read all answers no far-back status until it has.
const (
	stalePage  = 5000
	stalePages = 8
)

// staleSet is one queue's stale credentials as this replica knows them.
type staleSet struct {
	mu sync.RWMutex
	// upTo maps a user to the highest arrival number of its credentials
	// that no longer name its place.
	upTo map[string]int64
	// local holds the users whose place this replica took out of the line
	// (leave, removal) or sent to the back (an enter with a credential),
	// when, until a read that began after it.
	local map[string]time.Time
	// lost is the highest number of an entry not kept (staleMax): no
	// far-back answer while the head has not passed it.
	lost int64
	// n mirrors len(upTo) + len(local), plus one while lost is set, so
	// that the far-back path skips the lock while there is nothing to
	// look up.
	n atomic.Int64
	// from is the cursor of the next read (snapshot.lua's from), used
	// by RefreshSnapshot alone, under refresh.
	from    string
	refresh sync.Mutex
	// passed is the head the last forgetting went up to: the set is
	// walked again only when the head moved on.
	passed int64
}

func newStaleSet() *staleSet {
	return &staleSet{upTo: make(map[string]int64), local: make(map[string]time.Time), from: "-inf",
		lost: math.MinInt64, passed: math.MinInt64}
}

// stale reports whether a credential of user with arrival number seq may
// no longer name its place, so that Redis must answer it. head is the
// arrival number at the head of the snapshot that would answer.
func (st *staleSet) stale(user string, seq, head int64) bool {
	if st.n.Load() == 0 {
		return false
	}
	st.mu.RLock()
	defer st.mu.RUnlock()
	if head <= st.lost {
		return true
	}
	if _, ok := st.local[user]; ok {
		return true
	}
	v, ok := st.upTo[user]
	return ok && seq <= v
}

// changed records that this replica took user's place out of the line
// or sent it to the back: its credentials go to Redis until a read that
// began after now includes it.
func (st *staleSet) changed(user string, now time.Time) {
	st.mu.Lock()
	st.local[user] = now
	st.count()
	st.mu.Unlock()
}

// count sets n; st.mu must be held.
func (st *staleSet) count() {
	n := len(st.upTo) + len(st.local)
	if st.lost != math.MinInt64 {
		n++
	}
	st.n.Store(int64(n))
}

// apply adds the entries (user, number) of a read that began at began,
// forgets the local records made before it, and the entries the head
// passed: those below passed, the head of the snapshot this read
// replaces (a status may still be answered from that one, never from an
// older one).
func (st *staleSet) apply(entries []staleEntry, began time.Time, passed int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, e := range entries {
		if v, ok := st.upTo[e.user]; ok && v >= e.upTo {
			continue
		}
		if _, ok := st.upTo[e.user]; !ok && len(st.upTo) >= staleMax {
			st.lost = max(st.lost, e.upTo)
			continue
		}
		st.upTo[e.user] = e.upTo
	}
	for u, at := range st.local {
		if at.Before(began) {
			delete(st.local, u)
		}
	}
	if passed > st.passed {
		for u, v := range st.upTo {
			if v < passed {
				delete(st.upTo, u)
			}
		}
		st.passed = passed
	}
	if st.lost < passed {
		st.lost = math.MinInt64
	}
	st.count()
}

// staleEntry is one entry of the stale ZSET.
type staleEntry struct {
	user string
	upTo int64
}
