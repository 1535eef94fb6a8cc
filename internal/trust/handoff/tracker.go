package handoff

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// Tracker is a replica's view of the places that moved lately
// (queue.RecentMoves): the queue store answers a place far back in line
// from its snapshot, without Redis and so without the generation check
// of the scripts, unless Recent says it moved. The view is read from the
// moved ZSET (the last hour's moves) about once a second per queue; a
// move this replica made counts at once; and a view older than MaxAge
// (Redis away, the loop stopped) answers true for every place, so the
// status goes to Redis, which tells.
//
// A page that still polls with the older credential learns of the move
// at its next poll within the hour: from Redis on this path. After the
// hour the far-back path answers that credential again, an estimate that
// changes nothing (every call that could, near the head, enter, leave,
// asks Redis, which refuses it).
type Tracker struct {
	rdb    redis.Scripter
	views  map[string]*view
	maxAge time.Duration
}

// MaxAge is how old a tracker's view of a queue may be and still answer
// (the queue store's snapshots have the same bound).
const MaxAge = 2500 * time.Millisecond

// Every is how often Run reads each queue's moves.
const Every = 900 * time.Millisecond

// movedPage is how many moves one read of the moved ZSET returns at most
// (moved.lua's LIMIT). A read once a second sees the last overlap's
// moves, far fewer; only a replica's first read (the hour's moves) or a
// burst takes several pages, each a bounded call (about a millisecond of
// Redis) rather than one as long as the hour's moves.
const movedPage = 1000

// overlap is how far back each read looks before the latest move seen,
// for moves whose Redis time is a little behind it (a failover to a
// replica whose clock is behind).
const overlap = 5 * time.Second

type view struct {
	seen atomic.Pointer[movedSet] // as last read; nil before the first read
	mu   sync.Mutex
	// local are the moves this replica made since (member → when, its own
	// clock), until a read includes them.
	local map[string]time.Time
	// nlocal mirrors len(local), so that Recent skips the lock when empty.
	nlocal atomic.Int32
}

// movedSet is one read of a queue's moves: never changed once stored.
type movedSet struct {
	read    time.Time        // when it was read (this replica's clock)
	latest  int64            // the latest move seen (Redis ms)
	members map[string]int64 // member → when it moved (Redis ms)
}

// NewTracker returns a tracker of queues' moves in rdb.
func NewTracker(rdb redis.Scripter, queues []string) *Tracker {
	t := &Tracker{rdb: rdb, views: make(map[string]*view, len(queues)), maxAge: MaxAge}
	for _, q := range queues {
		t.views[q] = &view{local: make(map[string]time.Time)}
	}
	return t
}

func (t *Tracker) has(q string) bool {
	_, ok := t.views[q]
	return ok
}

// Recent reports whether member's place in q may have moved within the
// last hour, or the view of q is too old to tell. It allocates nothing.
func (t *Tracker) Recent(q, member string) bool {
	v := t.views[q]
	if v == nil {
		return false // not a queue of ours: the store refuses it anyway
	}
	s := v.seen.Load()
	if s == nil {
		return true
	}
	if age := time.Since(s.read); age > t.maxAge || age < 0 {
		return true
	}
	if _, ok := s.members[member]; ok {
		return true
	}
	if v.nlocal.Load() == 0 {
		return false
	}
	v.mu.Lock()
	_, ok := v.local[member]
	v.mu.Unlock()
	return ok
}

// moved records that this replica moved member's place in q.
func (t *Tracker) moved(q, member string) {
	v := t.views[q]
	if v == nil {
		return
	}
	v.mu.Lock()
	v.local[member] = time.Now()
	v.nlocal.Store(int32(len(v.local)))
	v.mu.Unlock()
}

// Refresh reads q's moves since the last read.
func (t *Tracker) Refresh(ctx context.Context, q string) error {
	v := t.views[q]
	if v == nil {
		return queue.ErrUnknownQueue
	}
	old := v.seen.Load()
	since := int64(0)
	if old != nil {
		since = max(0, old.latest-overlap.Milliseconds())
	}
	started := time.Now()
	now, fresh, err := t.readMoves(ctx, q, since)
	if err != nil {
		return err
	}
	s := &movedSet{read: started}
	if old != nil {
		s.latest = old.latest
	}
	for _, at := range fresh {
		s.latest = max(s.latest, at)
	}
	// Copy the view only when it changes: new moves, or old ones to drop.
	horizon := now - queue.MovedKeep.Milliseconds()
	changed := old == nil
	if old != nil {
		for m, at := range fresh {
			if prev, ok := old.members[m]; !ok || prev != at {
				changed = true
				break
			}
		}
		for _, at := range old.members {
			if at < horizon {
				changed = true
				break
			}
		}
	}
	if changed {
		s.members = make(map[string]int64)
		if old != nil {
			for m, at := range old.members {
				if at >= horizon {
					s.members[m] = at
				}
			}
		}
		for m, at := range fresh {
			s.members[m] = at
		}
	} else {
		s.members = old.members
	}
	v.seen.Store(s)
	// Local moves made before this read started are in it now.
	v.mu.Lock()
	for m, at := range v.local {
		if at.Before(started) {
			delete(v.local, m)
		}
	}
	v.nlocal.Store(int32(len(v.local)))
	v.mu.Unlock()
	return nil
}

// readMoves reads q's moves since (ms, inclusive), movedPage at a time:
// member -> when it moved (Redis ms), and Redis's time of the last page.
// A page starts at the last one's latest time, past the moves of that
// time it already held: moves that share a millisecond are neither
// skipped nor read twice, however many (a move made meanwhile may shift
// them, which the next read's overlap catches).
func (t *Tracker) readMoves(ctx context.Context, q string, since int64) (int64, map[string]int64, error) {
	moves := make(map[string]int64)
	offset := 0
	for {
		reply, err := queue.WaitFor(ctx, 2*time.Second, func(ctx context.Context) ([]any, error) {
			return movedScript.Run(ctx, t.rdb, []string{rediskeys.Moved(q)}, since, offset, movedPage).Slice()
		})
		if err != nil {
			return 0, nil, err
		}
		now, _ := reply[0].(int64)
		n, last, tie := 0, since, 0
		for i := 1; i+1 < len(reply); i += 2 {
			n++
			member, _ := reply[i].(string)
			at, err := strconv.ParseInt(asString(reply[i+1]), 10, 64)
			if err != nil {
				continue
			}
			moves[member] = at
			if at == last {
				tie++
			} else {
				last, tie = at, 1
			}
		}
		if n < movedPage {
			return now, moves, nil
		}
		if last == since {
			offset += n // the whole page at since: skip it too
		} else {
			since, offset = last, tie
		}
	}
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

// Run refreshes every queue's view each Every until ctx ends, logging
// failures at most once a minute per queue (the views then age, and the
// status of far-back places goes to Redis).
func (t *Tracker) Run(ctx context.Context, log *slog.Logger) {
	tick := time.NewTicker(Every)
	defer tick.Stop()
	logged := make(map[string]time.Time)
	for {
		for q := range t.views {
			if err := t.Refresh(ctx, q); err != nil && ctx.Err() == nil && time.Since(logged[q]) > time.Minute {
				logged[q] = time.Now()
				log.Warn("handoff: reading recent moves", "queue", q, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
