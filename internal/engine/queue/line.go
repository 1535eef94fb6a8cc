package queue

import (
	"time"
)

// The line as a public document: what a replica's snapshot of a
// queue says to anyone, the same for every reader. A place far from the
// head knows its own arrival number (its credential carries it, and enter
// and status answer it), so with this document a page can work out its
// own position and wait, as the replica's far-back status does, without
// asking the origin at all: the document is cacheable, by nginx or a CDN,
// and reveals no person.

// Line is a queue's snapshot as the public document shows it.
type Line struct {
	// Read is when the replica read the snapshot (its clock).
	Read time.Time
	// Waiting is the line's length (with a draw's participants).
	Waiting int64
	// NearHead is how many places from the head are answered exactly, by
	// Redis: a page whose position falls there asks the origin.
	NearHead int64
	// TickReach is how many places one tick can take off the head (its
	// budget, and with abandonment the places it may drop or hold).
	TickReach int64
	// UntilNextTick is the time from Read to the next tick.
	UntilNextTick  time.Duration
	RefillSize     int
	RefillInterval time.Duration
	Paused         bool
	// ClosedAt is when the operator closed the sale (zero: open), and
	// Closed its message by language and when sales reopen (Text's).
	ClosedAt time.Time
	Closed   Closing
	// OpensAt and PrequeueFrom are a scheduled opening (zero: none), and
	// DrawCommitment the SHA-256 of its draw's sealed seed (hex; ""
	// none), published before anyone's place is known (docs/DRAW.md).
	OpensAt, PrequeueFrom time.Time
	DrawCommitment        string
	// AbandonAfter is how long a waiting place may go unheard (0: never);
	// only places near the head are ever dropped.
	AbandonAfter time.Duration
	// HeldMax is the highest arrival number set aside at the head until
	// its place confirms (0: none): such a place must ask the origin.
	HeldMax int64
	// InDraw is true while a scheduled opening's draw has not placed its
	// participants: nobody can be placed from the document.
	InDraw bool
	// Complete is false when the replica could not read every credential
	// made stale before the read: the document then places nobody.
	Complete bool
	// Ranks and Arrivals are the sampled line: the place at 0-based rank
	// Ranks[i] has arrival number Arrivals[i]; both ascend.
	Ranks, Arrivals []int64

	snap *snapshot
}

// Line is queue's document from this replica's snapshot, with no Redis
// command: false when it holds none fresh enough to answer from
// (snapshotMaxAge), e.g. while Redis is away.
func (s *Store) Line(queue string, now time.Time) (Line, bool) {
	q, err := s.queue(queue)
	if err != nil {
		return Line{}, false
	}
	sn := q.snap.Load()
	if sn == nil {
		return Line{}, false
	}
	if age := now.Sub(sn.read); age > snapshotMaxAge || age < 0 {
		return Line{}, false
	}
	h := sn.head
	l := Line{Read: sn.read, Waiting: h[headWaiting], NearHead: sn.near, TickReach: sn.tickReach(),
		UntilNextTick: ms(h[headUntilNextTick]), RefillSize: int(h[headRefillSize]), RefillInterval: ms(h[headInterval]),
		Paused: h[headPaused] == 1, OpensAt: msTime(h[headOpensAt]), PrequeueFrom: msTime(h[headPrequeueFrom]),
		AbandonAfter: ms(h[headAbandonAfter]), InDraw: sn.inDraw > 0, Complete: sn.complete,
		Ranks: sn.ranks, Arrivals: sn.seqs, snap: sn, ClosedAt: msTime(h[headClosed]), Closed: sn.closed,
		DrawCommitment: sn.drawSealed}
	if sn.held > 0 {
		l.HeldMax = sn.heldMax
	}
	return l, true
}

// Same reports whether l and o come from one snapshot read.
func (l Line) Same(o Line) bool { return l.snap == o.snap }

// Ticket is what the far-back status answers for the place with arrival
// number arrival, age after the read: the same arithmetic a page does
// with the document (web/static/line-math.js). False when the document
// cannot place it (near the head, or not placeable at all): ask Redis.
func (l Line) Ticket(arrival int64, age time.Duration) (Ticket, bool) {
	if l.snap == nil {
		return Ticket{}, false
	}
	return l.snap.ticket(arrival, age)
}
