package queue

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
)

// A place far from the head changes little from one second to the next,
// and a line of a million polls about 17,700 times a second: answering
// each poll with status.lua would make Redis's work grow with the line,
// not with the people being let in. So each replica keeps, per queue, a
// snapshot of the line (snapshot.lua: the head status.lua would reply,
// and the arrival numbers at a few dozen ranks), read once a second and
// after each tick it applies, and answers a place far from the head from
// it and the arrival number the place's credential carries (Caller.Seq):
// its position is interpolated between the two sampled ranks around it.
//
// Everything else asks Redis, as before: a place within near_head of the
// head (common_config.lua: the places the next ticks may admit, enough of them
// that a page is heard from on its way to the head), any place the
// snapshot cannot place with confidence (ahead of the head it saw, behind
// the tail it saw, during an opening's draw), a credential without an
// arrival number, and any call once the snapshot is older than
// snapshotMaxAge.

// snapshotEvery is how often a replica reads a queue's snapshot at the
// least (it also reads one after each tick it applies).
const snapshotEvery = 900 * time.Millisecond

// snapshotMaxAge is how old a snapshot may be and still answer: past it
// (Redis away, the scheduler stopped) every status asks Redis.
const snapshotMaxAge = 2500 * time.Millisecond

// snapshotEven is how many evenly spaced ranks snapshot.lua samples.
const snapshotEven = 32

// snapshot is one read of snapshot.lua.
type snapshot struct {
	read   time.Time      // when it was read (this replica's clock)
	head   [headLen]int64 // as status.lua's reply head
	near   int64          // places from the head answered exactly
	inDraw int64          // an opening's participants not yet placed
	// held and heldMax are the places set aside at the head (tick.lua)
	// and the highest arrival number among them: such a place is answered
	// by Redis, which takes its status call as its confirmation.
	held, heldMax int64
	// complete is false when the stale credentials recorded before the
	// read could not all be read (stalePages): it then answers nothing.
	complete bool
	ranks    []int64 // sampled ranks (0-based), ascending
	seqs     []int64 // the arrival numbers at those ranks
	// closed is the operator's closing while head says the sale is
	// closed (PageText's, read only then).
	closed Closing
	// drawSealed is the sealed draw's commitment while head says an
	// opening lies ahead (PageDraw's, read only then).
	drawSealed string
}

// The values of snapshot.lua's first reply after the head, in order.
const (
	snapNear = headLen + iota
	snapInDraw
	snapHeld
	snapHeldMax
	snapNextFrom
	snapMore
	snapRanks // then (rank, seq) pairs
)

// RefreshSnapshot reads queue's snapshot if force (a tick was just
// applied), if the one held is older than snapshotEvery, or if a tick may
// have been applied since it was read. The scheduler
// calls it after each tick call, so a replica reads one about once a
// second per queue however many people poll. With it come the stale
// credentials recorded since the last read (stale.go), a page per call,
// up to stalePages calls.
func (s *Store) RefreshSnapshot(ctx context.Context, queue string, force bool) error {
	q, err := s.queue(queue)
	if err != nil {
		return err
	}
	// A snapshot read before a tick that may since have been applied
	// answers less (position): it is read again at once.
	if old := q.snap.Load(); !force && old != nil && time.Since(old.read) < snapshotEvery && old.ticksSince(time.Since(old.read)) == 0 {
		return nil
	}
	st := q.stale
	st.refresh.Lock()
	defer st.refresh.Unlock()
	began, passed := time.Now(), int64(math.MinInt64)
	if prev := q.snap.Load(); prev != nil && len(prev.seqs) > 0 {
		passed = prev.seqs[0]
	}
	var sn *snapshot
	for range stalePages {
		v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]any, error) {
			return snapshotScript.Run(ctx, s.rdb, q.snapKeys,
				append(q.args, snapshotEven, st.from, stalePage)...).Slice()
		})
		if err != nil {
			return fmt.Errorf("queue: snapshot: %w", err)
		}
		var entries []staleEntry
		var next string
		sn, entries, next, err = parseSnapshot(v, time.Now())
		if err != nil {
			return err
		}
		st.apply(entries, began, passed)
		st.from = next
		if sn.complete {
			break
		}
	}
	if sn.head[headClosed] > 0 {
		t, err := s.PageText(ctx, queue)
		if err != nil {
			return err
		}
		sn.closed = t.Closed
	}
	if sn.head[headUntilOpen] > 0 {
		d, err := s.PageDraw(ctx, queue)
		if err != nil {
			return err
		}
		sn.drawSealed = d.Sealed
	}
	q.snap.Store(sn)
	return nil
}

// parseSnapshot reads snapshot.lua's reply: the snapshot, the stale
// entries it carries and the cursor of the next read.
func parseSnapshot(v []any, read time.Time) (*snapshot, []staleEntry, string, error) {
	if len(v) != 2 {
		return nil, nil, "", fmt.Errorf("queue: snapshot: reply of %d values", len(v))
	}
	nums, ok1 := v[0].([]any)
	pairs, ok2 := v[1].([]any)
	if !ok1 || !ok2 || len(pairs)%2 != 0 {
		return nil, nil, "", fmt.Errorf("queue: snapshot: unexpected reply %T, %T", v[0], v[1])
	}
	ints := make([]int64, len(nums))
	for i, n := range nums {
		x, ok := n.(int64)
		if !ok {
			return nil, nil, "", fmt.Errorf("queue: snapshot: value %d is %T", i, n)
		}
		ints[i] = x
	}
	sn, err := newSnapshot(ints, read)
	if err != nil {
		return nil, nil, "", err
	}
	entries := make([]staleEntry, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		user, _ := pairs[i].(string)
		score, _ := pairs[i+1].(string)
		upTo, err := strconv.ParseInt(score, 10, 64)
		if err != nil {
			return nil, nil, "", fmt.Errorf("queue: snapshot: stale entry %q: %w", score, err)
		}
		entries = append(entries, staleEntry{user: user, upTo: upTo})
	}
	return sn, entries, strconv.FormatInt(ints[snapNextFrom], 10), nil
}

func newSnapshot(v []int64, read time.Time) (*snapshot, error) {
	if len(v) < snapRanks || (len(v)-snapRanks)%2 != 0 {
		return nil, fmt.Errorf("queue: snapshot: reply of %d values", len(v))
	}
	sn := &snapshot{read: read, near: v[snapNear], inDraw: v[snapInDraw], held: v[snapHeld],
		heldMax: v[snapHeldMax], complete: v[snapMore] == 0}
	copy(sn.head[:], v[:headLen])
	for i := snapRanks; i < len(v); i += 2 {
		sn.ranks = append(sn.ranks, v[i])
		sn.seqs = append(sn.seqs, v[i+1])
	}
	return sn, nil
}

// tickReach is how many places one tick can take off the head of the
// line: its budget admitted, and with abandonment on abandonBatch dropped
// and holdBatch held.
func (sn *snapshot) tickReach() int64 {
	if sn.head[headAbandonAfter] == 0 {
		return sn.head[headRefillSize]
	}
	return sn.head[headRefillSize] + abandonBatch + holdBatch
}

// ticksSince is how many ticks may have been applied since the snapshot
// was read, age ago: none before the next one was due, then one per
// interval.
func (sn *snapshot) ticksSince(age time.Duration) int64 {
	until, interval := sn.head[headUntilNextTick], max(sn.head[headInterval], 1)
	if ms := age.Milliseconds(); ms >= until {
		return 1 + (ms-until)/interval
	}
	return 0
}

// position estimates the 1-based position of the place with arrival
// number seq, age after the snapshot was read: ok false when the snapshot
// cannot place it far from the head with confidence. At a sampled rank it
// is exact; between two, the places are taken as spread evenly over the
// arrival numbers (leaves and abandoned places thin the line about
// evenly), and the estimate never leaves the two ranks. Far from the head
// means beyond near_head, and beyond what the ticks since the read may
// have taken off the head (tickReach each): a place a tick set aside
// (held) must ask Redis to confirm, and so must any place
// at or below the highest held arrival number.
func (sn *snapshot) position(seq int64, age time.Duration) (int64, bool) {
	n := len(sn.seqs)
	if n < 2 || sn.inDraw > 0 || !sn.complete || seq < sn.seqs[0] || seq > sn.seqs[n-1] ||
		(sn.held > 0 && seq <= sn.heldMax) {
		return 0, false
	}
	// The last sample at or before seq.
	i := sort.Search(n, func(i int) bool { return sn.seqs[i] > seq }) - 1
	if sn.ranks[i]+1 <= sn.near+sn.ticksSince(age)*sn.tickReach() {
		return 0, false // near the head, or may be: ask Redis
	}
	if sn.seqs[i] == seq || i == n-1 {
		return sn.ranks[i] + 1, true
	}
	span, ahead := sn.seqs[i+1]-sn.seqs[i], seq-sn.seqs[i]
	return sn.ranks[i] + 1 + ahead*(sn.ranks[i+1]-sn.ranks[i])/span, true
}

// answer is the ticket of user's waiting place with arrival number seq
// from the snapshot held for q, or ok false when it cannot give one (none
// held, too old, the place not far from the head, or the credential
// stale: stale.go).
func (q *queueRef) answer(user string, seq int64, now time.Time) (Ticket, bool) {
	sn := q.snap.Load()
	if sn == nil || seq <= 0 {
		return Ticket{}, false
	}
	age := now.Sub(sn.read)
	if age > snapshotMaxAge || age < 0 {
		return Ticket{}, false
	}
	t, ok := sn.ticket(seq, age)
	if !ok || q.stale.stale(user, seq, sn.seqs[0]) {
		return Ticket{}, false
	}
	return t, true
}

// ticket is the ticket of the waiting place with arrival number seq, age
// after the snapshot was read: its estimated position, and the wait from
// it as status.lua's head gives it, the head's times less the age. The
// public line document gives a page what it needs to do the same
// (Line, web/static/line-math.js).
func (sn *snapshot) ticket(seq int64, age time.Duration) (Ticket, bool) {
	pos, ok := sn.position(seq, age)
	if !ok {
		return Ticket{}, false
	}
	head := sn.head
	head[headUntilNextTick] = max(0, head[headUntilNextTick]-age.Milliseconds())
	head[headUntilOpen] = max(0, head[headUntilOpen]-age.Milliseconds())
	t, err := newTicket(head[:], statusWaiting, pos)
	if err != nil {
		return Ticket{}, false
	}
	t.Estimated = true
	t.setRange() // wider: the position is an estimate
	return t, true
}
