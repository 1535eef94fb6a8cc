package queue

import (
	"context"
	"fmt"
	"sort"
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
// head (common.lua: the places the next ticks may admit, enough of them
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
	ranks  []int64        // sampled ranks (0-based), ascending
	seqs   []int64        // the arrival numbers at those ranks
}

// RefreshSnapshot reads queue's snapshot if force (a tick was just
// applied) or if the one held is older than snapshotEvery. The scheduler
// calls it after each tick call, so a replica reads one about once a
// second per queue however many people poll.
func (s *Store) RefreshSnapshot(ctx context.Context, queue string, force bool) error {
	q, err := s.queue(queue)
	if err != nil {
		return err
	}
	if old := q.snap.Load(); !force && old != nil && time.Since(old.read) < snapshotEvery {
		return nil
	}
	v, err := waitFor(ctx, s.timeout, func(ctx context.Context) ([]int64, error) {
		return snapshotScript.Run(ctx, s.rdb, q.snapKeys, append(s.defaultArgs[:], snapshotEven)...).Int64Slice()
	})
	if err != nil {
		return fmt.Errorf("queue: snapshot: %w", err)
	}
	sn, err := newSnapshot(v, time.Now())
	if err != nil {
		return err
	}
	q.snap.Store(sn)
	return nil
}

func newSnapshot(v []int64, read time.Time) (*snapshot, error) {
	if len(v) < headLen+2 || (len(v)-headLen-2)%2 != 0 {
		return nil, fmt.Errorf("queue: snapshot: reply of %d values", len(v))
	}
	sn := &snapshot{read: read, near: v[headLen], inDraw: v[headLen+1]}
	copy(sn.head[:], v[:headLen])
	for i := headLen + 2; i < len(v); i += 2 {
		sn.ranks = append(sn.ranks, v[i])
		sn.seqs = append(sn.seqs, v[i+1])
	}
	return sn, nil
}

// position estimates the 1-based position of the place with arrival
// number seq: ok false when the snapshot cannot place it far from the
// head with confidence. At a sampled rank it is exact; between two, the
// places are taken as spread evenly over the arrival numbers (leaves and
// abandoned places thin the line about evenly), and the estimate never
// leaves the two ranks.
func (sn *snapshot) position(seq int64) (int64, bool) {
	n := len(sn.seqs)
	if n < 2 || sn.inDraw > 0 || seq < sn.seqs[0] || seq > sn.seqs[n-1] {
		return 0, false
	}
	// The last sample at or before seq.
	i := sort.Search(n, func(i int) bool { return sn.seqs[i] > seq }) - 1
	if sn.ranks[i]+1 <= sn.near {
		return 0, false // near the head, or may be: ask Redis
	}
	if sn.seqs[i] == seq || i == n-1 {
		return sn.ranks[i] + 1, true
	}
	span, ahead := sn.seqs[i+1]-sn.seqs[i], seq-sn.seqs[i]
	return sn.ranks[i] + 1 + ahead*(sn.ranks[i+1]-sn.ranks[i])/span, true
}

// answer is the ticket of a waiting place with arrival number seq from
// the snapshot held for q, or ok false when it cannot give one (none
// held, too old, or the place not far from the head).
func (q *queueRef) answer(seq int64, now time.Time) (Ticket, bool) {
	sn := q.snap.Load()
	if sn == nil || seq <= 0 {
		return Ticket{}, false
	}
	age := now.Sub(sn.read)
	if age > snapshotMaxAge || age < 0 {
		return Ticket{}, false
	}
	pos, ok := sn.position(seq)
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
