package queue

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// batcher gathers the calls for one queue and one script that arrive while
// a call of that script is in flight, and sends them together in the next
// call (group commit). Under load this spreads a script's fixed cost
// (clock, config, bucket, the FCALL itself) over many users; with a
// single caller it is one call per request, as before. Users keep the
// order in which they reached this replica, and each call of the script is
// atomic as ever.
//
// Every call ends by its deadline, timeout after it was made, even when
// Redis stalls. One timer per batcher, set for the oldest unfinished call,
// enforces that: a timer per call (context.WithTimeout) cost the server
// 5-9 % of its CPU per request and a tenth of its allocations.
//
// No goroutine lives longer than the work: the first caller to find no
// batch running starts one, which runs batches until none is pending.
type batcher struct {
	// run calls the script once for calls and returns their tickets in
	// order (a refused call's carries its refusal), or the error all of
	// them get.
	run     func(ctx context.Context, calls []Caller) ([]Ticket, error)
	timeout time.Duration

	mu       sync.Mutex
	pending  []*batchCall
	inflight []*batchCall // the batch being run
	running  bool
	timer    *time.Timer // fires expire; nil until the first call
	armed    bool        // timer is set for an unfinished call's deadline
}

type batchCall struct {
	caller   Caller
	deadline time.Time
	done     chan struct{} // closed once t or err is set
	t        Ticket
	err      error
	finished bool // t or err set and done closed; guarded by batcher.mu
	gone     bool // the caller stopped waiting; guarded by batcher.mu
}

const (
	// maxBatch bounds the users of one script call, so that one call stays
	// short (a few µs of Redis time per user).
	maxBatch = 256
	// batchTimeout bounds one script call; callers stop waiting at their
	// own deadline.
	batchTimeout = 5 * time.Second
	// maxPending bounds the calls waiting for a batch while Redis is slow
	// or away; beyond it a call fails at once (503) instead of queueing.
	maxPending = 20000
)

// do queues a call for the next batch and waits for its ticket, until the
// call's deadline or until ctx ends.
func (b *batcher) do(ctx context.Context, caller Caller) (Ticket, error) {
	c := &batchCall{caller: caller, done: make(chan struct{})}
	b.mu.Lock()
	if len(b.pending) >= maxPending {
		b.mu.Unlock()
		return Ticket{}, ErrOverloaded
	}
	c.deadline = time.Now().Add(b.timeout)
	b.pending = append(b.pending, c)
	if !b.armed {
		b.arm(c.deadline)
	}
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go b.drain()
	}
	select {
	case <-c.done:
		return c.t, c.err
	case <-ctx.Done():
		// A call not yet sent is dropped from its batch; one already sent
		// may still take effect, and a status call tells.
		b.mu.Lock()
		c.gone = true
		b.mu.Unlock()
		return Ticket{}, ctx.Err()
	}
}

// drain runs batches until none is pending.
func (b *batcher) drain() {
	for {
		// Let the goroutines that are already runnable (requests read off
		// the network, about to call do) run first, so they join this batch
		// rather than the next. Without it a new drain goroutine runs at
		// once (it is scheduled next), and with few CPUs a batch held about
		// 5 users instead of 25 under load, each extra call costing Redis
		// and the server a round trip (docs/PERFORMANCE.md, change 5).
		runtime.Gosched()
		b.mu.Lock()
		calls := make([]*batchCall, 0, min(len(b.pending), maxBatch))
		taken := 0
		for _, c := range b.pending {
			if len(calls) == maxBatch {
				break
			}
			taken++
			if !c.gone && !c.finished {
				calls = append(calls, c)
			}
		}
		b.pending = b.pending[taken:]
		if len(calls) == 0 && len(b.pending) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.inflight = calls
		b.mu.Unlock()
		if len(calls) == 0 {
			continue
		}

		callers := make([]Caller, len(calls))
		for i, c := range calls {
			callers[i] = c.caller
		}
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		tickets, err := b.run(ctx, callers)
		cancel()
		b.mu.Lock()
		for i, c := range calls {
			switch {
			case err != nil:
				b.finish(c, Ticket{}, err)
			case tickets[i].refused != nil:
				b.finish(c, Ticket{}, tickets[i].refused)
			default:
				b.finish(c, tickets[i], nil)
			}
		}
		b.inflight = nil
		b.mu.Unlock()
	}
}

// finish gives c its outcome, unless it has one already (it timed out
// first). b.mu must be held.
func (b *batcher) finish(c *batchCall, t Ticket, err error) {
	if c.finished {
		return
	}
	c.t, c.err, c.finished = t, err, true
	close(c.done)
}

// arm sets the timer for deadline. b.mu must be held.
func (b *batcher) arm(deadline time.Time) {
	b.armed = true
	if b.timer == nil {
		b.timer = time.AfterFunc(time.Until(deadline), b.expire)
		return
	}
	b.timer.Reset(time.Until(deadline))
}

// expire ends every call past its deadline, in flight or pending, and sets
// the timer for the oldest call left.
func (b *batcher) expire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armed = false
	now := time.Now()
	var next time.Time
	for _, calls := range [][]*batchCall{b.inflight, b.pending} {
		for _, c := range calls {
			if c.finished || c.gone {
				continue
			}
			if !c.deadline.After(now) {
				b.finish(c, Ticket{}, ErrTimeout)
			} else if next.IsZero() || c.deadline.Before(next) {
				next = c.deadline
			}
		}
	}
	if !next.IsZero() {
		b.arm(next)
	}
}

// enterArgs and statusArgs return a batch's script arguments and its
// KEYS beyond fixed: the replica's defaults and limits, then per call
// (enter.lua and status.lua list them) its values and keys. In
// statusArgs a key a call does not use is the queue's unused marker key,
// never read; enterArgs passes only the keys a call uses, and the usual
// enter (enterAsks) none.
//
// With a draw sealed, as this replica knows it (draw.go), the draw's id
// comes before the calls and each call's draw key and id hash after them;
// gen is the read of the seal they come from.
func (s *Store) enterArgs(q *queueRef, calls []Caller) (keys []string, args []any, gen uint64) {
	keys = make([]string, 0, len(q.enterKeys)+2+len(calls))
	keys = append(keys, q.enterKeys...)
	keys = append(keys, q.keys.held, q.keys.drawKeys)
	drawID, entries, gen := drawArgs(s.sealOf(q.keys.name), calls)
	args = make([]any, 0, len(q.args)+len(s.enterLimits)+len(s.networkArgs)+2+2*len(calls)+len(entries))
	args = append(args, q.args...)
	args = append(args, s.enterLimits[:]...)
	args = append(args, s.networkArgs[:]...)
	args = append(args, s.humanArg(), drawID)
	priced := s.defaults.Price.Bits > 0
	for _, c := range calls {
		asks, proved, counted := enterAsks(c, priced)
		args = append(args, c.User, asks)
		if c.clientCost > 0 {
			keys = append(keys, q.clientKey(OpEnter, c))
		}
		for i := range c.Networks {
			if c.netCosts[i] > 0 {
				keys = append(keys, q.netKey(OpEnter, c, i))
			}
		}
		if c.placeCost > 0 {
			keys = append(keys, q.placeKey(OpEnter, c))
		}
		if proved {
			keys = append(keys, q.keys.proof(c.Proof.ID))
		}
		for _, n := range c.Networks[:counted] {
			keys = append(keys, q.keys.netPlacesKey(n))
		}
		for _, o := range c.others {
			keys = append(keys, o.keys.waiting, o.keys.held, o.keys.draw)
		}
	}
	for _, e := range entries {
		args = append(args, e)
	}
	return keys, args, gen
}

// enterAsks is what an enter asks of enter.lua beyond its place in line:
// "" when nothing (no charge to the shared buckets, no proof of work, no
// place credential, no network to price, no class or human check: an
// enter without a client), else "<client cost> <network cost> <site
// cost> <place cost> <difficulty> <expires ms> <gen> <counted> <seen 1>
// <seen 2> <flags>". proved says it brings a proof of work, whose key
// then follows its bucket keys; counted how many of its Networks' held
// ZSETs follow that (priced: the price is on, the caller is priced by its
// networks and is not its networks' first place here, seen.go), and
// seen 1 and 2 whether those networks placed someone through this
// replica lately (1) or not (0; also when not counted).
// flags: 1, priced at the ceiling (PriceCeiling); 2, passed a human
// check. An account's enter (c.others, Store.otherLines) then adds " <lines>" and, per other line,
// "\n<lane> <member>": the lane ("": the general lane) and the member id
// the account has there; member ids hold no control character
// (ValidateUserID), so a line break cannot appear inside one. Their
// waiting, held and draw keys follow all the call's other keys.
func enterAsks(c Caller, priced bool) (asks string, proved bool, counted int) {
	proved = c.Proof.ID != "" && c.Proof.Difficulty > 0
	if priced && c.Pricing == PriceByNetwork && c.Networks[0] != "" && !c.first {
		counted = 1
		if c.Networks[1] != "" {
			counted = 2
		}
	}
	flags := 0
	if c.Pricing == PriceCeiling {
		flags |= 1
	}
	if c.Human {
		flags |= 2
	}
	if c.clientCost == 0 && c.netCosts == [2]int{} && c.placeCost == 0 && !proved && !c.Credential && counted == 0 && flags == 0 && len(c.others) == 0 {
		return "", false, 0
	}
	difficulty, expires := 0, int64(0)
	if proved {
		difficulty, expires = c.Proof.Difficulty, c.Proof.Expires.UnixMilli()
	}
	b := make([]byte, 0, 80)
	b = strconv.AppendInt(b, int64(c.clientCost), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(c.netCosts[0]), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(c.netCosts[1]), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(c.placeCost), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(difficulty), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, expires, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, c.gen(), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(counted), 10)
	for i := range 2 {
		b = append(b, ' ', '0')
		if i < counted && c.seen[i] {
			b[len(b)-1] = '1'
		}
	}
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(flags), 10)
	if len(c.others) > 0 {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(len(c.others)), 10)
		for _, o := range c.others {
			b = append(b, '\n')
			b = append(b, o.keys.lane...)
			b = append(b, ' ')
			b = append(b, AccountMember(o.keys.lane, c.Account)...)
		}
	}
	return string(b), proved, counted
}

// humanArg says to the scripts whether the human check's provider
// answers now ("1") or not ("0": a check asked falls back to proof of
// work at the ceiling).
func (s *Store) humanArg() string {
	if s.human != nil && s.human() {
		return "1"
	}
	return "0"
}

func (s *Store) statusArgs(q *queueRef, calls []Caller) (keys []string, args []any) {
	keys = make([]string, 0, len(q.statusKeys)+3*len(calls))
	keys = append(keys, q.statusKeys...)
	args = make([]any, 0, len(q.args)+len(s.statusLimits)+1+5*len(calls))
	args = append(args, q.args...)
	args = append(args, s.statusLimits[:]...)
	args = append(args, s.heldReturn)
	for _, c := range calls {
		held, counted := q.heldKey(c)
		keys = append(keys, q.clientKey("status", c), q.placeKey("status", c), held)
		args = append(args, c.User, c.clientCost, c.placeCost, c.gen(), counted)
	}
	return keys, args
}

// runBatch runs status.lua once for n calls, with keys and args from
// statusArgs: it replies a head (head* in reply.go), then a status and
// place per call, then an arrival number per call. (enter.lua runs
// through runEnter, replica.go.)
func (s *Store) runBatch(ctx context.Context, name string, script *script, n int, keys []string, args []any) ([]Ticket, error) {
	v, err := script.Run(ctx, s.rdb, keys, args...).Int64Slice()
	return s.batchTickets(name, n, v, err, true)
}
