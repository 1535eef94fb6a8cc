// Package queue owns the waiting room's state in Redis: the line, the
// entered set and the token bucket of each queue, changed only by the Lua
// scripts in scripts/.
//
// This file is the request path: enter, status, leave and done; the tick
// is in tick.go, WaitFor (every call's bound) in wait.go. The operator's
// side (Inspector) is in inspect.go, the value types in types.go, the
// errors in errors.go, the checks of inputs in validate.go and the reading
// of the scripts' replies in reply.go.
package queue

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bounds of one tick call (tick.lua), so a tick stays short.
const (
	// abandonBatch bounds the abandoned places one tick drops, so a tick
	// stays short however many closed their page.
	abandonBatch = 1000
	// holdBatch bounds the unheard places one tick sets aside (held, until
	// they confirm), and so the places it pops beyond its budget and
	// abandonBatch: silent places at the head never stop a tick from
	// reaching the people behind them, and a tick stays short.
	holdBatch = 5000
	// drawBatch bounds the participants of a scheduled opening's draw one
	// tick call places in the line (a few ms in all: docs/perf-log/draw.md).
	drawBatch = 10000
	// HistoryLen is how many applied ticks the history list keeps: an hour
	// at the default 5 s interval.
	HistoryLen = 720
	// purgeBatch bounds the expired sessions one tick removes, so a tick
	// never blocks Redis for long after a crowd's sessions all expire.
	purgeBatch = 1000
)

// Redis is the part of a go-redis client the store uses; *redis.Client and
// *redis.ClusterClient both satisfy it.
type Redis interface {
	functionCaller
	HGet(ctx context.Context, key, field string) *redis.StringCmd
	HMGet(ctx context.Context, key string, fields ...string) *redis.SliceCmd
	HSet(ctx context.Context, key string, values ...any) *redis.IntCmd
	HSetNX(ctx context.Context, key, field string, value any) *redis.BoolCmd
	LRange(ctx context.Context, key string, start, stop int64) *redis.StringSliceCmd
	Ping(ctx context.Context) *redis.StatusCmd
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
	Set(ctx context.Context, key string, value any, expiration time.Duration) *redis.StatusCmd
}

// Store runs the queue scripts for a fixed set of queues.
type Store struct {
	rdb      Redis
	defaults Settings
	queues   map[string]*queueRef
	names    []string
	// defaultArgs are the defaults as the scripts take them
	// (scriptDefaults), formatted and boxed once: a string turned into an
	// interface value allocates.
	defaultArgs []any
	// enterLimits and statusLimits are the scripts' limit arguments
	// (Limit.args: per client, then per place).
	enterLimits, statusLimits [4]any
	// heldReturn is status.lua's ARGV after the limits (Limits.HeldReturnPerTick).
	heldReturn int
	// networkArgs are enter.lua's limits per network and per site
	// (Limit.args each) and the price of a place (Price.args).
	networkArgs [7]any
	// human says whether the human check's provider answers now
	// (WithHumanCheck); nil: no provider, so never.
	human func() bool
	// local is the first stage of the rate limits (local.go).
	local *localStage
	// timeout bounds every call of the store, however Redis behaves.
	timeout time.Duration
	// observer hears admissions, refusals and batch sizes (observe.go).
	observer Observer
	// replica is the replica WAIT of enters (replica.go).
	replica replicaState
	// moves says which places moved to another device lately: their
	// status is never answered from the snapshot (WithRecentMoves).
	moves RecentMoves
	// texts are the queues' titles and messages as the waiting page last
	// read them (textcache.go).
	texts *textCache
	// draws are the queues' seals as this replica last read them, for
	// its enters (draw.go), and drawStates their draw states (PageDraw).
	draws      map[string]*seals
	drawStates *readCache[DrawState]
}

// RecentMoves knows which places moved to another device lately
// (internal/trust/handoff.Tracker): such a place's status goes to Redis, whose
// scripts refuse the older device's credential (ErrMoved), instead of
// being answered from the replica's snapshot, which knows nothing of
// credentials' generations. Recent must be quick (it runs on the far-back
// status path) and safe for concurrent use; it reports true when it does
// not know (its view is stale), so a replica that cannot tell asks Redis.
type RecentMoves interface {
	Recent(queue, user string) bool
}

// noMoves is the RecentMoves of a store without hand-overs.
type noMoves struct{}

func (noMoves) Recent(string, string) bool { return false }

// queueRef holds one queue's keys, and the KEYS list of each script, built
// once so the request path allocates nothing for them.
type queueRef struct {
	keys keys
	// args are the scripts' first arguments: the replica's defaults
	// (Store.defaultArgs), then the line's lane ("": the general lane),
	// ARGV[1..DEFAULTS] of the scripts (common_config.lua). Its capacity is its length, so a
	// call that appends its own arguments appends to a copy.
	args       []any
	enters     batcher // enter.lua calls, see batch.go
	statuses   batcher // status.lua calls
	enterKeys  []string
	statusKeys []string
	doneKeys   []string
	renewKeys  []string
	leaveKeys  []string
	tickKeys   []string
	infoKeys   []string
	// snap is the replica's latest snapshot of the line (snapshot.go);
	// nil until the first is read.
	snap atomic.Pointer[snapshot]
	// snapKeys is snapshot.lua's KEYS list.
	snapKeys []string
	// stale are the credentials that no longer name their place, as this
	// replica knows them (stale.go).
	stale *staleSet
	// seen are the networks this replica placed someone from lately,
	// for the price of a place (seen.go).
	seen seenFilter
	// lanes are the queue's lanes' lines (nil in a lane's own ref), made
	// as a place in each is first seen (Store.line).
	lanes *laneRefs
	// lanesSeen are the lanes the last tick call worked on (nil: not
	// read yet), for the next one (tick.go).
	lanesSeen atomic.Pointer[[]string]
	// tickedOK says this replica's last tick call reached Redis (false
	// before its first, and after a call that failed): only then does the
	// tick take a late interval for an outage (tick_move.lua, "Outages"), not
	// for a busy machine's late timer.
	tickedOK atomic.Bool
}

// NewStore returns a store for the named queues. defaults are the settings
// a queue has until its config is stored in Redis (see Seed). Every call of
// the store ends within timeout, with ErrTimeout (or ctx's error, when ctx
// ends first) if Redis has not answered. opts (options.go) are applied in
// order, once the store is built, and fixed from then on.
func NewStore(rdb Redis, queues []string, defaults Settings, timeout time.Duration, opts ...Option) (*Store, error) {
	if err := ValidateSettings(defaults); err != nil {
		return nil, err
	}
	if timeout <= 0 {
		return nil, errors.New("queue: timeout must be positive")
	}
	if len(queues) == 0 {
		return nil, errors.New("queue: no queues")
	}
	s := &Store{
		rdb:         rdb,
		defaults:    defaults,
		queues:      make(map[string]*queueRef, len(queues)),
		defaultArgs: scriptDefaults(defaults),
		timeout:     timeout,
		local:       newLocalStage(),
		observer:    nopObserver{},
		moves:       noMoves{},
		texts:       newTextCache(TextCacheTTL),
		draws:       make(map[string]*seals, len(queues)),
		drawStates:  newReadCache[DrawState](DrawCacheTTL),
	}
	copy(s.enterLimits[:], append(defaults.Limits.EnterPerClient.args(), defaults.Limits.EnterPerPlace.args()...))
	copy(s.statusLimits[:], append(defaults.Limits.StatusPerClient.args(), defaults.Limits.StatusPerPlace.args()...))
	s.heldReturn = defaults.Limits.HeldReturnPerTick
	copy(s.networkArgs[:], append(append(defaults.Limits.EnterPerNetwork.args(), defaults.Limits.EnterPerSite.args()...), defaults.Price.args()...))
	for _, name := range queues {
		if err := ValidateQueueName(name); err != nil {
			return nil, err
		}
		if _, dup := s.queues[name]; dup {
			return nil, fmt.Errorf("queue: %q declared twice", name)
		}
		q := s.newRef(name, "")
		s.queues[name] = q
		s.draws[name] = &seals{}
		s.names = append(s.names, name)
	}
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Queues returns the declared queue names in declaration order.
func (s *Store) Queues() []string { return append([]string(nil), s.names...) }

func (s *Store) queue(name string) (*queueRef, error) {
	q, ok := s.queues[name]
	if !ok {
		return nil, ErrUnknownQueue
	}
	return q, nil
}

// Enter is the one way into a queue, whatever the caller's identity
// (e, which the caller has established): e.Caller enters, admitted at
// once while tokens remain and nobody waits, else at the back of the line
// (entering again goes to the back); with e.Join a user who may hold a
// place from another device already joins instead (join). A place
// e.Replaces names is then given up and the ticket asked again, so that
// the answer counts the line without it.
//
// The common case, no join, nothing replaced and the general lane, is one
// script call, gathered with concurrent ones of the queue into one round
// trip (batch.go); a join adds a status before, a replaced place a leave
// and a status after. ctx can end this caller's wait early.
//
// The defences check the call (defences.go): it may be refused with
// ErrRateLimited, ErrQueueFull (both in a *Retry), ErrChallengeRequired,
// ErrHumanCheckRequired, for a place in a lane the queue no longer has
// ErrUnknownLane, or for an account (Caller.Account; a join's own when
// unset) that holds a place in another of the queue's lines
// ErrPlaceInOtherLine (an *OtherLineError). A refused or failed enter
// changes nothing: the replaced place is kept.
func (s *Store) Enter(ctx context.Context, queue string, e Entry) (Ticket, error) {
	var t Ticket
	var err error
	if e.Join {
		if e.Account == "" {
			e.Account = accountOf(e.User)
		}
		t, err = s.join(ctx, queue, e.Caller)
	} else {
		t, err = s.enter(ctx, queue, e.Caller)
	}
	if err != nil || e.Replaces == "" || e.Replaces == e.User {
		return t, err
	}
	if err := s.leave(ctx, queue, e.Replaces, ReasonLeft); err != nil {
		return Ticket{}, err
	}
	return s.Status(ctx, queue, Caller{User: e.User})
}

// enter is Enter of c: one script call, a read of the config before it
// for a lane's place, and of the lanes for an account's.
func (s *Store) enter(ctx context.Context, queue string, c Caller) (Ticket, error) {
	q, err := s.line(queue, c.User)
	if err != nil {
		return Ticket{}, err
	}
	if q.keys.lane != "" {
		// A place in a lane is made, or made again at the back, only while
		// the queue has the lane (ErrUnknownLane): one read of the config,
		// paid by a lane's enters alone.
		if err := s.checkLane(ctx, queue, q.keys.lane); err != nil {
			return Ticket{}, err
		}
	}
	l := s.defaults.Limits
	var t Ticket
	for attempt := 0; ; attempt++ {
		if c.Account != "" {
			// One account, one place per queue: the script refuses the
			// enter while the account holds a place in another line.
			// Refused, not moved there: arrival numbers are per line (each
			// lane counts its own), so a place moved to another line could
			// not keep its arrival order, and a lane token would become a
			// way to jump ahead.
			if c.others, err = s.otherLines(ctx, queue, q); err != nil {
				return Ticket{}, err
			}
		}
		t, err = s.limited(ctx, &q.enters, queue, OpEnter, l.EnterPerClient, l.EnterPerPlace, c, l.EnterPerNetwork, l.EnterPerSite)
		var o otherLine
		if !errors.As(err, &o) {
			break
		}
		if o > 0 && int(o) <= len(c.others) {
			return Ticket{}, &OtherLineError{Lane: c.others[o-1].keys.lane}
		}
		// A lane this replica has not seen may hold places (lanes were
		// changed): read them again, as the tick does.
		s.forgetLanes(queue)
		if attempt == 2 {
			return Ticket{}, fmt.Errorf("queue: enter: the lanes kept changing")
		}
	}
	if err == nil {
		s.dropSeal(queue, t) // no opening ahead: enters stop making draw keys
	}
	if err == nil && c.Credential {
		// Entering again with a credential: a place it held is now at the
		// back, and its older credentials go to Redis (stale.go).
		q.stale.changed(c.User, time.Now())
	}
	return t, err
}

// Status reports where c.User stands, behind the rate limits of c
// (ErrRateLimited in a *Retry), and with c.Credential refused with
// ErrMoved when the place has since moved to another device. A place far
// from the head whose caller knows its arrival number (c.Seq) is answered
// from the replica's snapshot, without Redis, behind the local stage of
// the limits alone (snapshot.go); every other status asks Redis, gathered
// with concurrent ones of the queue into one script call (batch.go).
func (s *Store) Status(ctx context.Context, queue string, c Caller) (Ticket, error) {
	q, err := s.line(queue, c.User)
	if err != nil {
		return Ticket{}, err
	}
	l := s.defaults.Limits
	if c.Seq > 0 && !s.moves.Recent(queue, c.User) {
		now := time.Now()
		if t, ok := q.answer(c.User, c.Seq, now); ok {
			if err := ValidateUserID(c.User); err != nil {
				return Ticket{}, err
			}
			if err := s.local.admit(queue, OpStatus, &c, l.StatusPerClient, l.StatusPerPlace, [2]Limit{}, now); err != nil {
				s.observe(queue, OpStatus, Ticket{}, err)
				return Ticket{}, err
			}
			t.SessionMax = s.defaults.SessionMax
			s.observe(queue, OpStatus, t, nil)
			return t, nil
		}
	}
	return s.limited(ctx, &q.statuses, queue, OpStatus, l.StatusPerClient, l.StatusPerPlace, c)
}

// limited runs c's call (op: OpEnter or OpStatus) through b behind the
// rate limits: the local first stage (local.go), then the script's shared
// buckets, whose refusal the local stage is told of. perNet are the
// limits of c's wider networks (enter only; none given: none).
func (s *Store) limited(ctx context.Context, b *batcher, queue, op string, perClient, perPlace Limit, c Caller, perNet ...Limit) (Ticket, error) {
	var nets [2]Limit
	copy(nets[:], perNet)
	// Validated before joining a batch, so one bad id never fails the
	// others' call.
	if err := ValidateUserID(c.User); err != nil {
		return Ticket{}, err
	}
	if err := s.local.admit(queue, op, &c, perClient, perPlace, nets, time.Now()); err != nil {
		s.observe(queue, op, Ticket{}, err)
		return Ticket{}, err
	}
	t, err := b.do(ctx, c)
	for range 2 {
		// A pre-queue's enter whose draw keys were not the sealed draw's
		// (or none: this replica had not read the seal) changed nothing,
		// not even a shared bucket: read the seal and send it again, as
		// charged here already (draw.go).
		var ds drawStale
		if !errors.As(err, &ds) {
			break
		}
		if err = s.readSeal(ctx, queue, ds.gen); err == nil {
			t, err = b.do(ctx, c)
		}
	}
	if errors.As(err, &drawStale{}) {
		err = errors.New("queue: enter: the draw's seal kept changing")
	}
	if errors.Is(err, ErrRateLimited) {
		s.local.refused(queue, op, c, perClient, perPlace, nets)
	}
	s.observe(queue, op, t, err)
	return t, err
}

// join is Enter for a user who may already hold a place from another
// device (a site's join token names the same account everywhere): a place
// in the line or an admission is kept as it is, and only a user holding
// neither enters. Two devices joining at the same instant may both enter;
// the later one then goes to the back, next to where both arrived.
func (s *Store) join(ctx context.Context, queue string, c Caller) (Ticket, error) {
	t, err := s.Status(ctx, queue, Caller{User: c.User})
	if err != nil || t.Status != NotWaiting {
		return t, err
	}
	return s.enter(ctx, queue, c)
}

// Admission returns the start of user's current admission to queue, or
// ok = false when the user holds none (or queue is not one of this
// store's).
func (s *Store) Admission(ctx context.Context, queue, user string) (start time.Time, ok bool, err error) {
	if !s.Has(queue) || ValidateUserID(user) != nil {
		return time.Time{}, false, nil
	}
	t, err := s.Status(ctx, queue, Caller{User: user})
	if err != nil || t.Status != Entered {
		return time.Time{}, false, err
	}
	return t.AdmittedAt, true, nil
}

// Current reports whether the admission of user that began at start is
// still the user's current one: the check that makes an entry pass
// revocable (pass.Admissions), since leaving, entering again, expiry,
// done and removal all end the admission. With sliding sessions
// (Settings.SessionMax) a current admission is renewed by the check, in
// the same script.
func (s *Store) Current(ctx context.Context, queue, user string, start time.Time) (bool, error) {
	if s.defaults.SessionMax == 0 {
		at, ok, err := s.Admission(ctx, queue, user)
		return ok && at.Equal(start), err
	}
	n, err := s.renew(ctx, queue, user, start)
	return n > 0, err
}

// Extend renews user's admission that began at start as a sliding
// session's check does: it now ends SessionTTL from now, never later than
// SessionMax after it began. extended is false when that admission is
// current but already ends as late as it may; ErrNotCurrent when it is
// not current; ErrNoSliding when sessions do not slide here (an admission
// then ends SessionTTL after it began, and so does its pass).
func (s *Store) Extend(ctx context.Context, queue, user string, start time.Time) (extended bool, err error) {
	if s.defaults.SessionMax == 0 {
		return false, ErrNoSliding
	}
	n, err := s.renew(ctx, queue, user, start)
	switch {
	case err != nil:
		return false, err
	case n == 0:
		return false, ErrNotCurrent
	}
	return n == 2, nil
}

// renew runs renew.lua: 2 renewed, 1 current and at its limit, 0 not
// current (or queue not one of this store's).
func (s *Store) renew(ctx context.Context, queue, user string, start time.Time) (int64, error) {
	q, err := s.queue(queue)
	if err != nil || ValidateUserID(user) != nil {
		return 0, nil
	}
	n, err := WaitFor(ctx, s.timeout, func(ctx context.Context) (int64, error) {
		return renewScript.Run(ctx, s.rdb, q.renewKeys,
			append(q.args, user, start.UnixMilli(), s.defaults.SessionMax.Milliseconds())...).Int64()
	})
	if err != nil {
		return 0, fmt.Errorf("queue: renew: %w", err)
	}
	return n, nil
}

// Leave gives up c.User's place: out of the line and out of the entered
// set. It is not an error when the user is in neither. With c.Credential
// it is refused with ErrMoved, changing nothing, when the place has since
// moved to another device (internal/trust/handoff) than the one holding c's
// credential of generation c.Gen.
func (s *Store) Leave(ctx context.Context, queue string, c Caller) error {
	if c.Credential {
		return s.leave(ctx, queue, c.User, ReasonLeft, c.Gen)
	}
	return s.leave(ctx, queue, c.User, ReasonLeft)
}

func (s *Store) leave(ctx context.Context, queue, user, reason string, gen ...any) error {
	q, err := s.line(queue, user)
	if err != nil {
		return err
	}
	if err := ValidateUserID(user); err != nil {
		return err
	}
	n, err := WaitFor(ctx, s.timeout, func(ctx context.Context) (int64, error) {
		res, _ := s.runWaited(ctx, q, leaveScript, q.leaveKeys, append([]any{user, reason}, gen...)...)
		return res.Int64()
	})
	if err != nil {
		return fmt.Errorf("queue: leave: %w", err)
	}
	if n < 0 {
		return ErrMoved
	}
	if n > 0 {
		q.stale.changed(user, time.Now()) // until this replica's next read includes it
	}
	return nil
}

// Done ends user's admission that began at admittedAt: the order page says
// the user is done. Its slot is free for the next tick, and its entry pass
// no longer opens anything. Reports whether that admission was current.
func (s *Store) Done(ctx context.Context, queue, user string, admittedAt time.Time) (bool, error) {
	q, err := s.queue(queue)
	if err != nil {
		return false, err
	}
	if err := ValidateUserID(user); err != nil {
		return false, err
	}
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]int64, error) {
		res, _ := s.runWaited(ctx, q, doneScript, q.doneKeys, user, admittedAt.UnixMilli())
		return res.Int64Slice()
	})
	if err != nil {
		return false, fmt.Errorf("queue: done: %w", err)
	}
	if len(v) != 2 {
		return false, fmt.Errorf("queue: done: unexpected reply %v", v)
	}
	if v[0] != 1 {
		return false, nil
	}
	s.observer.AdmissionEnded(queue, ms(v[1]))
	return true, nil
}

// Info returns counts and settings of a queue: the runtime's read (the
// public API's queue info, the metrics), which the operator's Overview
// builds on.
func (s *Store) Info(ctx context.Context, queue string) (Info, error) {
	q, err := s.queue(queue)
	if err != nil {
		return Info{}, err
	}
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]int64, error) {
		return infoScript.Run(ctx, s.rdb, q.infoKeys, q.args...).Int64Slice()
	})
	if err != nil {
		return Info{}, fmt.Errorf("queue: info: %w", err)
	}
	info, err := newInfo(queue, v, s.defaults.SessionMax)
	if err != nil {
		return Info{}, err
	}
	// info.lua counts the general lane's line; the lanes' lines are the
	// queue's too (one more round trip, for a queue with lanes only).
	lanes, err := s.knownLanes(ctx, q)
	if err != nil {
		return Info{}, fmt.Errorf("queue: info: %w", err)
	}
	if len(lanes) > 0 {
		n, err := s.lineLengths(ctx, queue, lanes)
		if err != nil {
			return Info{}, fmt.Errorf("queue: info: %w", err)
		}
		for _, c := range n {
			info.Waiting += c
		}
	}
	return info, nil
}

// Ping checks that Redis answers, within the store's timeout like every
// other call (for /readyz).
func (s *Store) Ping(ctx context.Context) error {
	_, err := WaitFor(ctx, s.timeout, func(ctx context.Context) (string, error) { return s.rdb.Ping(ctx).Result() })
	return err
}

// Has reports whether name is a declared queue.
func (s *Store) Has(name string) bool {
	_, ok := s.queues[name]
	return ok
}
