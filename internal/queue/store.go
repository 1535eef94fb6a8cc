// Package queue owns the waiting room's state in Redis: the line, the
// entered set and the token bucket of each queue, changed only by the Lua
// scripts in scripts/.
package queue

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// Sentinel errors. The HTTP layer maps each to a status and a stable code.
var (
	ErrUnknownQueue     = errors.New("queue: unknown queue")
	ErrInvalidUserID    = errors.New("queue: user id must be 1-128 bytes of UTF-8 without control characters")
	ErrInvalidRefill    = fmt.Errorf("queue: refill size must be between 1 and %d", MaxRefillSize)
	ErrInvalidMaxActive = fmt.Errorf("queue: max_active must be an integer from 0 (no cap) to %d", MaxMaxActive)
	ErrInvalidAbandon   = fmt.Errorf("queue: abandon_after_ms must be an integer from 0 (off) to %d", MaxAbandonAfter.Milliseconds())
	ErrInvalidOpening   = errors.New("queue: prequeue_from must not be after opens_at, and needs one")
	ErrInvalidQueueName = errors.New("queue: queue name must be 1-64 of A-Z a-z 0-9 _ -")
)

// Limits of the inputs a store accepts.
const (
	MaxUserIDBytes = 128
	MaxRefillSize  = 100000
	// MaxMaxActive bounds the cap on active users (0 is no cap).
	MaxMaxActive = 10000000
	// MaxAbandonAfter bounds abandon_after (0 turns abandonment off).
	MaxAbandonAfter = 24 * time.Hour
	// abandonBatch bounds the abandoned places one tick drops, so a tick
	// stays short however many closed their page.
	abandonBatch = 1000
	// drawBatch bounds the participants of a scheduled opening's draw one
	// tick call places in the line (SHA-1 each, a few ms in all).
	drawBatch = 10000
	// HistoryLen is how many applied ticks the history list keeps: an hour
	// at the default 5 s interval.
	HistoryLen = 720
	// purgeBatch bounds the expired sessions one tick removes, so a tick
	// never blocks Redis for long after a crowd's sessions all expire.
	purgeBatch = 1000
)

// Status is where a user stands in a queue.
type Status string

// The statuses a Ticket can carry.
const (
	Entered    Status = "ENTERED"
	Waiting    Status = "WAITING"
	NotWaiting Status = "NOT_WAITING"
	// NotOpen answers an enter before a scheduled opening's pre-queue
	// window: nobody can join yet (the API answers it as an error).
	NotOpen Status = "NOT_OPEN"
)

// Settings are one queue's admission settings.
type Settings struct {
	RefillSize     int           // users admitted per interval
	RefillInterval time.Duration // time between ticks
	SessionTTL     time.Duration // how long an admission stays valid
	// SessionMax turns on sliding sessions (0: off): each successful pass
	// check (Current) renews the admission for SessionTTL from then, never
	// beyond SessionMax after it began. At least SessionTTL.
	SessionMax time.Duration
	// Limits are the rate limits of enter and status calls (a replica's
	// setting, the same for every queue; zero: none).
	Limits Limits
	// MaxActive caps the admissions that have not ended (0: no cap).
	MaxActive int
	// MaxWaiting caps the line: beyond it a newcomer's enter is refused
	// with ErrQueueFull (0: no cap). Set live (Update), not a default.
	MaxWaiting int
	// ChallengeDifficulty is the proof of work asked before entering, in
	// leading zero bits (0: none). Set live (Update), not a default.
	ChallengeDifficulty int
	// AbandonAfter is how long a waiting user may go unheard (no enter or
	// status) before the tick drops the place when it reaches the head,
	// without spending a token on it (0: never).
	AbandonAfter time.Duration
}

// Reasons a user holds no place any more (Ticket.Reason), kept for an
// hour after the place ended.
const (
	ReasonAbandoned = "abandoned" // not heard from for abandon_after when the line reached them
	ReasonLeft      = "left"      // left the line, or gave up the admission
	ReasonExpired   = "expired"   // the admission's session TTL ran out
	ReasonRemoved   = "removed"   // the operator removed them
	ReasonDone      = "done"      // the order page said they were done
)

// reasons are the codes of the scripts' REASONS (common.lua), from 1.
var reasons = []string{ReasonAbandoned, ReasonLeft, ReasonExpired, ReasonRemoved, ReasonDone}

// Ticket is a user's place, as the scripts computed it at one instant.
type Ticket struct {
	Status Status
	// Reason says why a NotWaiting user's place ended, when known.
	Reason   string
	Position int64 // 1-based place in the line; 0 unless Waiting
	Waiting  int64 // people in the line
	// TicksAhead is how many full refills go in before the tick that
	// admits this user; 0 when the next tick does.
	TicksAhead int64
	// ETA is the time until the tick that admits this user: the time until
	// the next tick plus one interval per full refill ahead.
	ETA time.Duration
	// UntilNextTick is the time until the next tick is applied: 0 when it
	// is due and about to be.
	UntilNextTick time.Duration
	// Paused is true while the operator holds admissions: the place is
	// kept, but nobody moves until the queue resumes.
	Paused bool
	// OpensAt and PrequeueFrom are the queue's scheduled opening (zero:
	// none). A Waiting ticket at Position 0 is in its draw: the order is
	// drawn at OpensAt, and its UntilNextTick and ETA count down to it.
	OpensAt, PrequeueFrom time.Time
	// AbandonAfter is how long the user may go unheard before the place
	// is dropped (0: never); polls must come more often.
	AbandonAfter time.Duration
	// AdmittedAt is when the admission began (Redis clock); zero unless
	// Entered. It identifies the admission: entering again, or being
	// admitted again later, gives a new one.
	AdmittedAt time.Time
	// Settings in force when the ticket was computed.
	RefillSize     int
	RefillInterval time.Duration
	SessionTTL     time.Duration
	SessionMax     time.Duration // sliding sessions' limit; 0: they do not slide

	refused error // the call was refused (defences.go); the rest is empty
}

// AdmissionEnds is the latest an Entered ticket's admission can run out:
// SessionTTL after it began, or with sliding sessions SessionMax after (a
// session not renewed ends sooner, which the pass's revocation check sees).
func (t Ticket) AdmissionEnds() time.Time {
	if t.SessionMax > 0 {
		return t.AdmittedAt.Add(t.SessionMax)
	}
	return t.AdmittedAt.Add(t.SessionTTL)
}

// TickResult reports one call of Tick.
type TickResult struct {
	Applied bool  // false when this interval's tick had already been applied
	Moved   int64 // users moved from the line to the entered set
	Waiting int64 // people left in the line
	Tokens  int64 // tokens in the bucket after the tick
	Purged  int64 // expired sessions removed
	// Admitted counts the admissions of the interval that just ended: the
	// users the previous tick moved plus those who entered on its tokens.
	Admitted int64
	// Abandoned counts the places this tick dropped at the head of the
	// line: not heard from for abandon_after.
	Abandoned int64
	// Late is how long after it was due (the start of its interval, Redis
	// clock) an applied tick was applied: the wait a refill adds on top of
	// the interval, whole intervals missed included.
	Late time.Duration
}

// Info is a snapshot of one queue.
type Info struct {
	Queue      string
	Waiting    int64
	Entered    int64 // active users: admissions that have not ended
	Tokens     int64
	Paused     bool
	Settings   Settings
	LastTickAt time.Time // zero when no tick was applied yet
	// AbandonedLastInterval counts the places the last tick dropped as
	// abandoned.
	AbandonedLastInterval int64
	// OpensAt and PrequeueFrom are the scheduled opening (zero: none).
	OpensAt, PrequeueFrom time.Time
	// DrawFor is the opening of the last draw (zero: none yet), DrawSeed
	// its seed and DrawCount the participants it placed in the line: with
	// them anyone can recompute the order (draw_key in common.lua).
	DrawFor   time.Time
	DrawSeed  int64
	DrawCount int64
	// AdmittedThisInterval counts the admissions of the interval in
	// progress: the last tick's moves and the direct entries since.
	AdmittedThisInterval int64
	Now                  time.Time // Redis time of the snapshot
}

// HistoryPoint is one ended interval.
type HistoryPoint struct {
	At        time.Time // when the interval's tick was applied
	Admitted  int64     // admitted during the interval (never above refill_size)
	Waiting   int64     // people in the line at its end
	Abandoned int64     // places its tick dropped as abandoned
}

// Redis is the part of a go-redis client the store uses; *redis.Client and
// *redis.ClusterClient both satisfy it.
type Redis interface {
	redis.Scripter
	HGet(ctx context.Context, key, field string) *redis.StringCmd
	HSet(ctx context.Context, key string, values ...any) *redis.IntCmd
	HSetNX(ctx context.Context, key, field string, value any) *redis.BoolCmd
	LRange(ctx context.Context, key string, start, stop int64) *redis.StringSliceCmd
	Ping(ctx context.Context) *redis.StatusCmd
}

// Store runs the queue scripts for a fixed set of queues.
type Store struct {
	rdb      Redis
	defaults Settings
	queues   map[string]*queueRef
	names    []string
	// defaultArgs are the defaults as script arguments (refill size,
	// interval ms, TTL ms, max active), formatted and boxed once: a string
	// turned into an interface value allocates.
	defaultArgs [5]any
	// enterLimits and statusLimits are the scripts' limit arguments
	// (Limit.args: per client, then per place).
	enterLimits, statusLimits [4]any
	// local is the first stage of the rate limits (local.go).
	local *localStage
	// timeout bounds every call of the store, however Redis behaves.
	timeout time.Duration
	// observer hears admissions, refusals and batch sizes (observe.go).
	observer Observer
	// replica is the replica WAIT of enters (replica.go).
	replica replicaState
}

// queueRef holds one queue's keys, and the KEYS list of each script, built
// once so the request path allocates nothing for them.
type queueRef struct {
	keys       keys
	enters     batcher // enter.lua calls, see batch.go
	statuses   batcher // status.lua calls
	enterKeys  []string
	statusKeys []string
	doneKeys   []string
	renewKeys  []string
	leaveKeys  []string
	tickKeys   []string
	infoKeys   []string
}

var queueNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidateQueueName reports whether name can be a queue: the name goes in
// a hash tag, so braces and the like are out.
func ValidateQueueName(name string) error {
	if !queueNameRE.MatchString(name) {
		return fmt.Errorf("%w: %q", ErrInvalidQueueName, name)
	}
	return nil
}

// ValidateUserID reports whether id is acceptable as a user id.
func ValidateUserID(id string) error {
	if id == "" || len(id) > MaxUserIDBytes || !utf8.ValidString(id) {
		return ErrInvalidUserID
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return ErrInvalidUserID
		}
	}
	return nil
}

// ValidateSettings checks settings before they are used or stored.
func ValidateSettings(s Settings) error {
	if err := checkRefillSize(s.RefillSize); err != nil {
		return err
	}
	if s.RefillInterval < time.Millisecond {
		return errors.New("queue: refill interval must be at least 1ms")
	}
	if s.SessionTTL < time.Millisecond {
		return errors.New("queue: session TTL must be at least 1ms")
	}
	if s.SessionMax != 0 && s.SessionMax < s.SessionTTL {
		return errors.New("queue: a sliding session's maximum (WAITROOM_SESSION_MAX) must be at least the session TTL")
	}
	if err := checkMaxActive(s.MaxActive); err != nil {
		return err
	}
	if err := s.Limits.Validate(); err != nil {
		return err
	}
	return checkAbandonAfter(s.AbandonAfter)
}

// The bounds of the settings an operator changes live, checked the same
// way for the defaults (ValidateSettings) and for an Update.
func checkRefillSize(n int) error {
	if n < 1 || n > MaxRefillSize {
		return ErrInvalidRefill
	}
	return nil
}

func checkMaxActive(n int) error {
	if n < 0 || n > MaxMaxActive {
		return ErrInvalidMaxActive
	}
	return nil
}

func checkAbandonAfter(d time.Duration) error {
	if d < 0 || d > MaxAbandonAfter {
		return ErrInvalidAbandon
	}
	return nil
}

// NewStore returns a store for the named queues. defaults are the settings
// a queue has until its config is stored in Redis (see Seed). Every call of
// the store ends within timeout, with ErrTimeout (or ctx's error, when ctx
// ends first) if Redis has not answered.
func NewStore(rdb Redis, queues []string, defaults Settings, timeout time.Duration) (*Store, error) {
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
		rdb:      rdb,
		defaults: defaults,
		queues:   make(map[string]*queueRef, len(queues)),
		defaultArgs: [5]any{
			strconv.Itoa(defaults.RefillSize),
			strconv.FormatInt(defaults.RefillInterval.Milliseconds(), 10),
			strconv.FormatInt(defaults.SessionTTL.Milliseconds(), 10),
			strconv.Itoa(defaults.MaxActive),
			strconv.FormatInt(defaults.AbandonAfter.Milliseconds(), 10),
		},
		timeout:  timeout,
		local:    newLocalStage(),
		observer: nopObserver{},
	}
	copy(s.enterLimits[:], append(defaults.Limits.EnterPerClient.args(), defaults.Limits.EnterPerPlace.args()...))
	copy(s.statusLimits[:], append(defaults.Limits.StatusPerClient.args(), defaults.Limits.StatusPerPlace.args()...))
	for _, name := range queues {
		if err := ValidateQueueName(name); err != nil {
			return nil, err
		}
		if _, dup := s.queues[name]; dup {
			return nil, fmt.Errorf("queue: %q declared twice", name)
		}
		k := keysFor(name)
		q := &queueRef{
			keys:       k,
			enterKeys:  []string{k.waiting, k.entered, k.tokens, k.seq, k.config, k.tick, k.heard, k.draw, k.admitted},
			statusKeys: []string{k.waiting, k.entered, k.config, k.tick, k.heard, k.gone, k.draw, k.admitted},
			doneKeys:   []string{k.entered, k.gone, k.admitted},
			renewKeys:  []string{k.entered, k.config, k.admitted},
			leaveKeys:  []string{k.waiting, k.entered, k.heard, k.gone, k.draw, k.admitted},
			tickKeys:   []string{k.waiting, k.entered, k.tokens, k.config, k.tick, k.history, k.heard, k.gone, k.draw, k.admitted},
			infoKeys:   []string{k.waiting, k.entered, k.tokens, k.config, k.tick, k.draw},
		}
		q.enters = batcher{timeout: timeout, run: func(ctx context.Context, calls []Caller) ([]Ticket, error) {
			s.observer.Batch(name, OpEnter, len(calls))
			keys, args := s.enterArgs(q, calls)
			return s.runEnter(ctx, name, q, len(calls), keys, args) // the script, and WAIT if set (replica.go)
		}}
		q.statuses = batcher{timeout: timeout, run: func(ctx context.Context, calls []Caller) ([]Ticket, error) {
			s.observer.Batch(name, OpStatus, len(calls))
			keys, args := s.statusArgs(q, calls)
			return s.runBatch(ctx, "status", statusScript, len(calls), keys, args)
		}}
		s.queues[name] = q
		s.names = append(s.names, name)
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

// Seed stores the default settings of every queue in Redis where none are
// stored yet, so the first replica to start decides and later replicas, and
// later restarts, keep what operators set.
func (s *Store) Seed(ctx context.Context) error {
	for _, name := range s.names {
		cfg := s.queues[name].keys.config
		for i, field := range []string{"refill_size", "refill_interval_ms", "session_ttl_ms", "max_active", "abandon_after_ms"} {
			_, err := waitFor(ctx, s.timeout, func(ctx context.Context) (bool, error) {
				return s.rdb.HSetNX(ctx, cfg, field, s.defaultArgs[i]).Result()
			})
			if err != nil {
				return fmt.Errorf("queue: seed %s: %w", name, err)
			}
		}
	}
	return nil
}

// Enter puts user into the queue: admitted at once while tokens remain and
// nobody waits, else at the back of the line. Entering again goes to the
// back. Concurrent calls for one queue are gathered into one script call
// (batch.go); ctx can end this caller's wait early.
func (s *Store) Enter(ctx context.Context, queue, user string) (Ticket, error) {
	return s.EnterAs(ctx, queue, Caller{User: user})
}

// EnterAs is Enter for a call the defences check (defences.go): it may be
// refused with ErrRateLimited, ErrQueueFull (both in a *Retry) or
// ErrChallengeRequired, and then changed nothing.
func (s *Store) EnterAs(ctx context.Context, queue string, c Caller) (Ticket, error) {
	q, err := s.queue(queue)
	if err != nil {
		return Ticket{}, err
	}
	l := s.defaults.Limits
	return s.limited(ctx, &q.enters, queue, OpEnter, l.EnterPerClient, l.EnterPerPlace, c)
}

// Status reports where user stands. Concurrent calls for one queue are
// gathered into one script call (batch.go).
func (s *Store) Status(ctx context.Context, queue, user string) (Ticket, error) {
	return s.StatusAs(ctx, queue, Caller{User: user})
}

// StatusAs is Status for a call the rate limits check: it may be refused
// with ErrRateLimited (in a *Retry).
func (s *Store) StatusAs(ctx context.Context, queue string, c Caller) (Ticket, error) {
	q, err := s.queue(queue)
	if err != nil {
		return Ticket{}, err
	}
	l := s.defaults.Limits
	return s.limited(ctx, &q.statuses, queue, OpStatus, l.StatusPerClient, l.StatusPerPlace, c)
}

// limited runs c's call (op: OpEnter or OpStatus) through b behind the
// rate limits: the local first stage (local.go), then the script's shared
// buckets, whose refusal the local stage is told of.
func (s *Store) limited(ctx context.Context, b *batcher, queue, op string, perClient, perPlace Limit, c Caller) (Ticket, error) {
	// Validated before joining a batch, so one bad id never fails the
	// others' call.
	if err := ValidateUserID(c.User); err != nil {
		return Ticket{}, err
	}
	if err := s.local.admit(queue, op, &c, perClient, perPlace, time.Now()); err != nil {
		s.observe(queue, op, Ticket{}, err)
		return Ticket{}, err
	}
	t, err := b.do(ctx, c)
	if errors.Is(err, ErrRateLimited) {
		s.local.refused(queue, op, c, perClient, perPlace)
	}
	s.observe(queue, op, t, err)
	return t, err
}

// Join is Enter for a user who may already hold a place from another
// device (a site's join token names the same account everywhere): a place
// in the line or an admission is kept as it is, and only a user holding
// neither enters. Two devices joining at the same instant may both enter;
// the later one then goes to the back, next to where both arrived.
func (s *Store) Join(ctx context.Context, queue string, c Caller) (Ticket, error) {
	t, err := s.Status(ctx, queue, c.User)
	if err != nil || t.Status != NotWaiting {
		return t, err
	}
	return s.EnterAs(ctx, queue, c)
}

// Admission returns the start of user's current admission to queue, or
// ok = false when the user holds none (or queue is not one of this
// store's).
func (s *Store) Admission(ctx context.Context, queue, user string) (start time.Time, ok bool, err error) {
	if !s.Has(queue) || ValidateUserID(user) != nil {
		return time.Time{}, false, nil
	}
	t, err := s.Status(ctx, queue, user)
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
	q, err := s.queue(queue)
	if err != nil || ValidateUserID(user) != nil {
		return false, nil
	}
	n, err := waitFor(ctx, s.timeout, func(ctx context.Context) (int64, error) {
		return renewScript.Run(ctx, s.rdb, q.renewKeys,
			append(s.defaultArgs[:], user, start.UnixMilli(), s.defaults.SessionMax.Milliseconds())...).Int64()
	})
	if err != nil {
		return false, fmt.Errorf("queue: renew: %w", err)
	}
	return n == 1, nil
}

// Leave removes user from the line and from the entered set: the user
// gives up. It is not an error when the user is in neither.
func (s *Store) Leave(ctx context.Context, queue, user string) error {
	return s.leave(ctx, queue, user, ReasonLeft)
}

// Remove is Leave on the operator's word: a user who asks later is told
// they were removed.
func (s *Store) Remove(ctx context.Context, queue, user string) error {
	return s.leave(ctx, queue, user, ReasonRemoved)
}

func (s *Store) leave(ctx context.Context, queue, user, reason string) error {
	q, err := s.queue(queue)
	if err != nil {
		return err
	}
	if err := ValidateUserID(user); err != nil {
		return err
	}
	_, err = waitFor(ctx, s.timeout, func(ctx context.Context) (any, error) {
		res, _ := s.runWaited(ctx, q, leaveScript, q.leaveKeys, user, reason)
		return res.Result()
	})
	if err != nil {
		return fmt.Errorf("queue: leave: %w", err)
	}
	return nil
}

// Tick applies the refill tick of the current interval if no replica has
// applied it yet. It is safe, and expected, to call it from every replica
// several times per interval.
func (s *Store) Tick(ctx context.Context, queue string) (TickResult, error) {
	q, err := s.queue(queue)
	if err != nil {
		return TickResult{}, err
	}
	v, err := waitFor(ctx, s.timeout, func(ctx context.Context) ([]int64, error) {
		return tickScript.Run(ctx, s.rdb, q.tickKeys,
			append(s.defaultArgs[:], purgeBatch, HistoryLen, abandonBatch, drawSeed(), drawBatch)...).Int64Slice()
	})
	if err != nil {
		return TickResult{}, fmt.Errorf("queue: tick: %w", err)
	}
	if len(v) != 8 {
		return TickResult{}, fmt.Errorf("queue: tick: unexpected reply %v", v)
	}
	return TickResult{Applied: v[0] == 1, Moved: v[1], Waiting: v[2], Tokens: v[3], Purged: v[4], Admitted: v[5], Abandoned: v[6],
		Late: time.Duration(v[7]) * time.Millisecond}, nil
}

// Info returns counts and settings of a queue.
func (s *Store) Info(ctx context.Context, queue string) (Info, error) {
	q, err := s.queue(queue)
	if err != nil {
		return Info{}, err
	}
	v, err := waitFor(ctx, s.timeout, func(ctx context.Context) ([]int64, error) {
		return infoScript.Run(ctx, s.rdb, q.infoKeys, s.defaultArgs[:]...).Int64Slice()
	})
	if err != nil {
		return Info{}, fmt.Errorf("queue: info: %w", err)
	}
	if len(v) != 20 {
		return Info{}, fmt.Errorf("queue: info: unexpected reply %v", v)
	}
	info := Info{
		Queue:   queue,
		Waiting: v[0],
		Entered: v[1],
		Tokens:  v[2],
		Paused:  v[9] == 1,
		Settings: Settings{
			RefillSize:          int(v[3]),
			RefillInterval:      time.Duration(v[4]) * time.Millisecond,
			SessionTTL:          time.Duration(v[5]) * time.Millisecond,
			SessionMax:          s.defaults.SessionMax, // a replica's setting, not the queue's
			MaxActive:           int(v[8]),
			AbandonAfter:        time.Duration(v[10]) * time.Millisecond,
			MaxWaiting:          int(v[18]),
			ChallengeDifficulty: int(v[19]),
		},
		AbandonedLastInterval: v[11],
		OpensAt:               msTime(v[12]),
		PrequeueFrom:          msTime(v[13]),
		DrawFor:               msTime(v[14]),
		DrawSeed:              v[15],
		DrawCount:             v[16],
		AdmittedThisInterval:  v[17],
		Now:                   time.UnixMilli(v[7]),
	}
	if v[6] > 0 {
		info.LastTickAt = time.UnixMilli(v[6])
	}
	return info, nil
}

// Update holds the settings an operator changes live; nil fields stay as
// they are.
type Update struct {
	RefillSize          *int
	MaxActive           *int
	MaxWaiting          *int
	ChallengeDifficulty *int
	Paused              *bool
	AbandonAfter        *time.Duration
	// OpensAt and PrequeueFrom schedule an opening; a zero time clears it.
	OpensAt, PrequeueFrom *time.Time
}

// Validate checks every field, so an update is applied whole or not at all.
func (u Update) Validate() error {
	if u.RefillSize != nil {
		if err := checkRefillSize(*u.RefillSize); err != nil {
			return err
		}
	}
	if u.MaxActive != nil {
		if err := checkMaxActive(*u.MaxActive); err != nil {
			return err
		}
	}
	if u.MaxWaiting != nil {
		if err := checkMaxWaiting(*u.MaxWaiting); err != nil {
			return err
		}
	}
	if u.ChallengeDifficulty != nil {
		if err := checkDifficulty(*u.ChallengeDifficulty); err != nil {
			return err
		}
	}
	if u.AbandonAfter != nil {
		if err := checkAbandonAfter(*u.AbandonAfter); err != nil {
			return err
		}
	}
	if u.OpensAt != nil && u.PrequeueFrom != nil && !u.PrequeueFrom.IsZero() &&
		(u.OpensAt.IsZero() || u.PrequeueFrom.After(*u.OpensAt)) {
		return ErrInvalidOpening
	}
	return nil
}

// UpdateSettings stores the fields of u that are set, in one command.
// Every replica's next script reads them from Redis: a new refill size or
// cap takes effect at the next tick everywhere, a pause at once.
func (s *Store) UpdateSettings(ctx context.Context, queue string, u Update) error {
	q, err := s.queue(queue)
	if err != nil {
		return err
	}
	if err := u.Validate(); err != nil {
		return err
	}
	var fields []any
	if u.RefillSize != nil {
		fields = append(fields, "refill_size", *u.RefillSize)
	}
	if u.MaxActive != nil {
		fields = append(fields, "max_active", *u.MaxActive)
	}
	if u.MaxWaiting != nil {
		fields = append(fields, "max_waiting", *u.MaxWaiting)
	}
	if u.ChallengeDifficulty != nil {
		fields = append(fields, "challenge_difficulty", *u.ChallengeDifficulty)
	}
	if u.AbandonAfter != nil {
		fields = append(fields, "abandon_after_ms", u.AbandonAfter.Milliseconds())
	}
	if u.OpensAt != nil {
		fields = append(fields, "opens_at_ms", unixMilliOrZero(*u.OpensAt))
	}
	if u.PrequeueFrom != nil {
		fields = append(fields, "prequeue_from_ms", unixMilliOrZero(*u.PrequeueFrom))
	}
	if u.Paused != nil {
		paused := 0
		if *u.Paused {
			paused = 1
		}
		fields = append(fields, "paused", paused)
	}
	if len(fields) == 0 {
		return nil
	}
	_, err = waitFor(ctx, s.timeout, func(ctx context.Context) (int64, error) {
		return s.rdb.HSet(ctx, q.keys.config, fields...).Result()
	})
	if err != nil {
		return fmt.Errorf("queue: update settings: %w", err)
	}
	return nil
}

// SetRefillSize stores a new refill size (UpdateSettings with just it).
func (s *Store) SetRefillSize(ctx context.Context, queue string, n int) error {
	return s.UpdateSettings(ctx, queue, Update{RefillSize: &n})
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
	n, err := waitFor(ctx, s.timeout, func(ctx context.Context) (int64, error) {
		res, _ := s.runWaited(ctx, q, doneScript, q.doneKeys, user, admittedAt.UnixMilli())
		return res.Int64()
	})
	if err != nil {
		return false, fmt.Errorf("queue: done: %w", err)
	}
	return n == 1, nil
}

// History returns the applied ticks kept for a queue, oldest first.
func (s *Store) History(ctx context.Context, queue string) ([]HistoryPoint, error) {
	q, err := s.queue(queue)
	if err != nil {
		return nil, err
	}
	raw, err := waitFor(ctx, s.timeout, func(ctx context.Context) ([]string, error) {
		return s.rdb.LRange(ctx, q.keys.history, 0, -1).Result()
	})
	if err != nil {
		return nil, fmt.Errorf("queue: history: %w", err)
	}
	points := make([]HistoryPoint, 0, len(raw))
	for _, entry := range raw {
		p, err := parseHistoryEntry(entry)
		if err != nil {
			return nil, err
		}
		points = append(points, p)
	}
	return points, nil
}

// parseHistoryEntry reads "at_ms:admitted:waiting:abandoned" (entries
// written before abandonment was counted have three fields).
func parseHistoryEntry(entry string) (HistoryPoint, error) {
	parts := strings.Split(entry, ":")
	if len(parts) != 3 && len(parts) != 4 {
		return HistoryPoint{}, fmt.Errorf("queue: malformed history entry %q", entry)
	}
	var n [4]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return HistoryPoint{}, fmt.Errorf("queue: malformed history entry %q", entry)
		}
		n[i] = v
	}
	return HistoryPoint{At: time.UnixMilli(n[0]), Admitted: n[1], Waiting: n[2], Abandoned: n[3]}, nil
}

// newTicket builds a ticket from the scripts' integers (durations and
// times in ms): head is {waiting, until_next_tick_ms, interval_ms,
// refill_size, ttl_ms, paused}, then the user's status code and place
// (position when waiting, admission time when entered, the code of why
// the place ended when not waiting). The ETA is the
// time until the next tick plus one interval for every full refill ahead.
func newTicket(head []int64, status, place int64) (Ticket, error) {
	waiting, untilNextTick, interval, refill, ttl := head[0], head[1], head[2], head[3], head[4]
	t := Ticket{
		Paused:         head[5] == 1,
		OpensAt:        msTime(head[6]),
		PrequeueFrom:   msTime(head[7]),
		AbandonAfter:   time.Duration(head[8]) * time.Millisecond,
		Waiting:        waiting,
		UntilNextTick:  time.Duration(untilNextTick) * time.Millisecond,
		RefillInterval: time.Duration(interval) * time.Millisecond,
		RefillSize:     int(refill),
		SessionTTL:     time.Duration(ttl) * time.Millisecond,
	}
	switch status {
	case 1:
		t.Status = Entered
		t.AdmittedAt = time.UnixMilli(place)
	case 2:
		t.Status = Waiting
		t.Position = place
		if place == 0 { // in a draw: the order is drawn at the opening
			t.UntilNextTick = time.Duration(head[9]) * time.Millisecond
			t.ETA = t.UntilNextTick
		} else if refill > 0 {
			t.TicksAhead = (place - 1) / refill
			t.ETA = t.UntilNextTick + time.Duration(t.TicksAhead)*t.RefillInterval
		}
	case 3:
		t.Status = NotWaiting
		if place >= 1 && int(place) <= len(reasons) {
			t.Reason = reasons[place-1]
		}
	case 4:
		t.Status = NotOpen
	default:
		return Ticket{}, fmt.Errorf("queue: unknown status code %d", status)
	}
	return t, nil
}

func unixMilliOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// drawSeed is a fresh random seed for a draw: 52 bits, which Lua holds
// exactly.
func drawSeed() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return strconv.FormatUint(binary.BigEndian.Uint64(b[:])>>12, 10)
}

// msTime is the time of a Unix ms count, zero for 0.
func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// Ping checks that Redis answers, within the store's timeout like every
// other call (for /readyz).
func (s *Store) Ping(ctx context.Context) error {
	_, err := waitFor(ctx, s.timeout, func(ctx context.Context) (string, error) { return s.rdb.Ping(ctx).Result() })
	return err
}

// Has reports whether name is a declared queue.
func (s *Store) Has(name string) bool {
	_, ok := s.queues[name]
	return ok
}

// waitFor runs call with ctx bounded by timeout and returns its result, or
// an error when that ends first: ErrTimeout, or ctx's own error. A client
// without ContextTimeoutEnabled ends a stalled command only by its read
// and write timeouts; waiting here makes every store call end in time
// whatever the client's options. Enter and Status wait in their batcher
// instead.
func waitFor[T any](ctx context.Context, timeout time.Duration, call func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := call(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return zero, ErrTimeout
		}
		return zero, ctx.Err()
	}
}
