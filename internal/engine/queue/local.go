package queue

import (
	"hash/maphash"
	"sync"
	"time"
)

// localStage is a replica's own first look at the rate limits, so that the
// shared buckets in Redis (two commands per bucket in the scripts) are
// consulted only for the clients and places that call often. Every call is
// counted here, in the same GCRA as the scripts':
//
//   - over the limit here: refused at once, without Redis (the shared count
//     is at least this replica's, so it is over too);
//   - quiet (at most a tenth of the burst used, and at least one call's
//     worth): let through without the shared bucket, and remembered as
//     not charged to it yet;
//   - otherwise hot: the shared bucket decides, charged with this call and
//     the quiet ones before it.
//
// A page polling every few seconds is always quiet, so the usual status
// call costs Redis nothing for its limits (docs/PERFORMANCE.md, "What the
// defences cost"). A client spreading its calls over N replicas is seen
// whole once it is hot on one of them; it can pass unseen only while it
// stays quiet on every replica, below N tenths of its burst.
type localStage struct {
	mu sync.Mutex
	// buckets are keyed by their key's hash, values without pointers: a
	// crowd makes four new buckets an enter, and a string key and a
	// pointer each were two allocations a bucket and a map the collector
	// had to scan (9 % of the server's CPU on enter against 1.5 % with two
	// buckets). Two keys of one hash (2^-64) would share a bucket: stricter
	// for those two, never looser than the shared buckets.
	buckets map[uint64]localBucket
	seed    maphash.Seed
	sweep   time.Time // when expired buckets are next dropped
	swept   time.Time // when they last were
}

type localBucket struct {
	fullAt    float64 // when the bucket is full again, ms since the epoch
	uncharged int     // quiet calls not yet charged to the shared bucket
}

// maxLocalBuckets bounds the stage's memory and the sweep's pause (a
// bucket lives from a call until it is full again: a fifth of a second for
// a polling page); beyond it every call is hot (the shared buckets still
// hold).
const maxLocalBuckets = 1 << 17

// The sweep runs every sweepEvery, and sooner when the stage is full, at
// most every fullSweepEvery: a crowd of new clients makes four buckets an
// enter (client, place, network, site), most full again within a second,
// and waiting out sweepEvery at 30,000 enters a second would fill the
// stage and send every call to Redis (measured: 1.3 bucket commands an
// enter). fullSweepEvery bounds the sweeps' CPU when the buckets are all
// live.
const (
	sweepEvery     = 2 * time.Second
	fullSweepEvery = 100 * time.Millisecond
)

func newLocalStage() *localStage {
	return &localStage{buckets: make(map[uint64]localBucket), seed: maphash.MakeSeed()}
}

// sweepLocked drops the buckets full again by t (ms), when it is time:
// every sweepEvery, or when the stage is full and fullSweepEvery has
// passed since the last sweep.
func (l *localStage) sweepLocked(now time.Time, t float64) {
	full := len(l.buckets) >= maxLocalBuckets
	if now.Before(l.sweep) && !(full && now.Sub(l.swept) >= fullSweepEvery) {
		return
	}
	for k, b := range l.buckets {
		if b.fullAt < t {
			delete(l.buckets, k)
		}
	}
	l.sweep, l.swept = now.Add(sweepEvery), now
}

// take counts one call against key's bucket under lim at now. It returns
// the cost to charge the shared bucket (0: quiet, do not ask it) or, when
// the call is over the limit, the wait before the next would pass. The key
// is made a string only for a new bucket: looking one up allocates nothing.
func (l *localStage) take(key []byte, lim Limit, now time.Time) (cost int, wait time.Duration) {
	if lim.Rate == 0 {
		return 0, 0
	}
	period := 1000 / lim.Rate
	t := float64(now.UnixNano()) / 1e6
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked(now, t)
	h := maphash.Bytes(l.seed, key)
	b, ok := l.buckets[h]
	if !ok {
		if len(l.buckets) >= maxLocalBuckets {
			return 1, 0
		}
		b = localBucket{fullAt: t}
	}
	defer func() { l.buckets[h] = b }() // b is a copy: every path below writes it back
	if b.fullAt < t {
		// Full again: the shared bucket has earned back whatever quiet
		// calls it was not charged.
		b.fullAt, b.uncharged = t, 0
	}
	fullAt := b.fullAt + period
	if over := fullAt - t - period*float64(lim.Burst); over > 0 {
		return 0, time.Duration(over * float64(time.Millisecond))
	}
	b.fullAt = fullAt
	// The 1 µs of slack absorbs float rounding (t is ~1.8e12 ms, exact to
	// ~0.2 µs): without it a new bucket's first call at a burst below 10
	// was sometimes hot.
	if fullAt-t <= period*float64(max(1, lim.Burst/10))+0.001 {
		b.uncharged++
		return 0, 0
	}
	cost = b.uncharged + 1
	b.uncharged = 0
	return cost, 0
}

// admit runs c through the stage for op (OpEnter, OpStatus or
// OpChallenge) in queue (each pair has buckets of its own) with its
// client, place and wider networks' limits (nets, for c.Networks),
// setting the costs the script charges to the shared buckets, or returns
// the refusal. The keys are spelled in a buffer on the stack: a bucket
// that exists costs no allocation.
func (l *localStage) admit(queue, op string, c *Caller, client, place Limit, nets [2]Limit, now time.Time) error {
	var buf [256]byte
	if c.Client != "" {
		cost, wait := l.take(bucketKey(buf[:0], queue, op, ":c:", c.Client), client, now)
		if wait > 0 {
			return &Retry{Err: ErrRateLimited, After: wait}
		}
		c.clientCost = cost
	}
	for i, n := range c.Networks {
		if n == "" {
			continue
		}
		cost, wait := l.take(bucketKey(buf[:0], queue, op, ":n:", n), nets[i], now)
		if wait > 0 {
			return &Retry{Err: ErrRateLimited, After: wait}
		}
		c.netCosts[i] = cost
	}
	if c.Proved {
		cost, wait := l.take(bucketKey(buf[:0], queue, op, ":p:", c.User), place, now)
		if wait > 0 {
			return &Retry{Err: ErrRateLimited, After: wait}
		}
		c.placeCost = cost
	}
	return nil
}

// bucketKey appends the key of a bucket to b: queue, op, kind (":c:" for a
// client, ":p:" for a place) and the client's or place's id.
func bucketKey(b []byte, queue, op, kind, id string) []byte {
	b = append(b, queue...)
	b = append(b, ' ')
	b = append(b, op...)
	b = append(b, kind...)
	return append(b, id...)
}

// refused is told that the shared buckets refused c (admitted for op in
// queue under client and place): a refused call changes nothing, so it
// no longer counts here either (else this replica would turn stricter
// than the shared buckets, refusing a client that waited what it was
// told), and the quiet calls its costs carried were not charged, so the
// next hot call carries them again and the shared count stays whole.
func (l *localStage) refused(queue, op string, c Caller, client, place Limit, nets [2]Limit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range []struct {
		taken bool // admit counted the call in this bucket
		key   []byte
		lim   Limit
		cost  int
	}{
		{c.Client != "", bucketKey(nil, queue, op, ":c:", c.Client), client, c.clientCost},
		{c.Proved, bucketKey(nil, queue, op, ":p:", c.User), place, c.placeCost},
		{c.Networks[0] != "", bucketKey(nil, queue, op, ":n:", c.Networks[0]), nets[0], c.netCosts[0]},
		{c.Networks[1] != "", bucketKey(nil, queue, op, ":n:", c.Networks[1]), nets[1], c.netCosts[1]},
	} {
		h := maphash.Bytes(l.seed, k.key)
		b, ok := l.buckets[h]
		if !k.taken || !ok || k.lim.Rate == 0 {
			continue
		}
		b.fullAt -= 1000 / k.lim.Rate
		switch {
		case k.cost > 1:
			b.uncharged += k.cost - 1
		case k.cost == 0 && b.uncharged > 0:
			b.uncharged--
		}
		l.buckets[h] = b
	}
}

// bucket is the bucket under key (tests).
func (l *localStage) bucket(key string) (localBucket, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[maphash.String(l.seed, key)]
	return b, ok
}
