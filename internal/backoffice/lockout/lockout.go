// Package lockout refuses a client that keeps failing to authenticate, with
// a lock that doubles each time it is earned. Its state lives in Redis, so
// every replica shares one budget per client, and each attempt is judged
// and counted by one script (attempt.lua): a locked client's secret is not
// even compared, and parallel guesses cannot slip between a check and a
// count.
//
// The script compares digests, not secrets: callers pass keyed digests
// (see Digest), so what reaches Redis (and its SLOWLOG or MONITOR) is of no
// use to anyone without the process's key.
package lockout

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

//go:embed attempt.lua
var attemptLua string

var attemptScript = redis.NewScript(attemptLua)

// Policy says when a client is locked and for how long.
type Policy struct {
	// MaxFailures failures within one Window lock the client.
	MaxFailures int
	// Window is the span failures are counted in; it starts at the first
	// failure after the last window or lock ended.
	Window time.Duration
	// BaseLock is the first lock; each further one doubles, up to MaxLock.
	BaseLock, MaxLock time.Duration
	// Memory is how long after its last failure a locked client's strikes
	// are remembered (the doubling restarts after it).
	Memory time.Duration
}

// DefaultPolicy: 10 failures in a minute lock a client for a minute, then
// 2, 4, 8 ... up to an hour, remembered for a day after the last failure.
// One client gets 40 guesses in its first 10 minutes and then about 10 an
// hour; an operator who mistypes the token a few times is never locked.
var DefaultPolicy = Policy{
	MaxFailures: 10,
	Window:      time.Minute,
	BaseLock:    time.Minute,
	MaxLock:     time.Hour,
	Memory:      24 * time.Hour,
}

func (p Policy) validate() error {
	if p.MaxFailures < 1 || p.Window <= 0 || p.BaseLock <= 0 || p.MaxLock < p.BaseLock || p.Memory <= 0 {
		return fmt.Errorf("lockout: invalid policy %+v", p)
	}
	return nil
}

// Verdict is the outcome of one attempt.
type Verdict int

const (
	// Locked: the client is locked and the secret was not compared.
	Locked Verdict = iota
	// Match: the presented secret is the expected one.
	Match
	// Mismatch: it is not; the failure was counted.
	Mismatch
)

// Result is a Verdict with the lock that goes with it.
type Result struct {
	Verdict Verdict
	// RetryAfter is how long the client stays locked: the time left when
	// Locked, the new lock when this Mismatch earned one, else 0.
	RetryAfter time.Duration
}

// Lockout judges attempts under one policy.
type Lockout struct {
	rdb    redis.Scripter
	policy Policy
	argv   [5]any // the policy as script arguments, formatted once
}

// New returns a lockout keeping its state in rdb.
func New(rdb redis.Scripter, p Policy) (*Lockout, error) {
	if rdb == nil {
		return nil, errors.New("lockout: no Redis client")
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return &Lockout{rdb: rdb, policy: p, argv: [5]any{
		strconv.Itoa(p.MaxFailures),
		strconv.FormatInt(p.Window.Milliseconds(), 10),
		strconv.FormatInt(p.BaseLock.Milliseconds(), 10),
		strconv.FormatInt(p.MaxLock.Milliseconds(), 10),
		strconv.FormatInt(p.Memory.Milliseconds(), 10),
	}}, nil
}

// Attempt judges one attempt by client: Locked without comparing while the
// client is locked, else Match or Mismatch of the two digests (a Mismatch
// is counted). An error means Redis did not answer: the caller must refuse
// the request, never let it through unjudged.
func (l *Lockout) Attempt(ctx context.Context, client netip.Addr, presented, expected []byte) (Result, error) {
	return l.AttemptKey(ctx, Key(client), presented, expected)
}

// AttemptKey is Attempt for the state kept under key: for a budget of
// another kind than the admin API's per client (invitation codes keep
// one per queue, per address and per network: rediskeys.CodeGuesses).
func (l *Lockout) AttemptKey(ctx context.Context, key string, presented, expected []byte) (Result, error) {
	keys := []string{key}
	argv := []any{presented, expected, l.argv[0], l.argv[1], l.argv[2], l.argv[3], l.argv[4]}
	v, err := attemptScript.Run(ctx, l.rdb, keys, argv...).Int64Slice()
	if err != nil {
		return Result{}, fmt.Errorf("lockout: attempt: %w", err)
	}
	if len(v) != 2 {
		return Result{}, fmt.Errorf("lockout: attempt: unexpected reply %v", v)
	}
	res := Result{RetryAfter: time.Duration(v[1]) * time.Millisecond}
	switch v[0] {
	case -1:
		res.Verdict = Locked
	case 1:
		res.Verdict = Match
	case 0:
		res.Verdict = Mismatch
	default:
		return Result{}, fmt.Errorf("lockout: attempt: unexpected verdict %d", v[0])
	}
	return res, nil
}

// failPresented and failExpected differ: Fail presents one for the other.
var failPresented, failExpected = []byte{0}, []byte{1}

// Fail counts a failure of client that was judged elsewhere (a token
// that names no live one, a session that is not live): Locked when the
// client was locked already, else Mismatch with the lock it earned, if
// any.
func (l *Lockout) Fail(ctx context.Context, client netip.Addr) (Result, error) {
	return l.Attempt(ctx, client, failPresented, failExpected)
}

// Key is the Redis key (HASH, see attempt.lua) of client's state: one per
// client as the rate limits count clients (clientip.Key), so an IPv6
// client is its /64 and walking the block does not buy fresh budgets.
func Key(client netip.Addr) string {
	return rediskeys.Lockout(clientip.Key(client))
}

// Digester turns secrets into digests keyed with a random key of this
// process: equal secrets give equal digests within the process, and a
// digest read from Redis cannot be checked against guessed secrets
// elsewhere.
type Digester struct{ key [32]byte }

// NewDigester returns a Digester with a fresh random key.
func NewDigester() *Digester {
	d := &Digester{}
	rand.Read(d.key[:]) // never fails (crypto/rand)
	return d
}

// Digest returns secret's keyed digest (HMAC-SHA-256).
func (d *Digester) Digest(secret string) []byte {
	m := hmac.New(sha256.New, d.key[:])
	m.Write([]byte(secret))
	return m.Sum(nil)
}
