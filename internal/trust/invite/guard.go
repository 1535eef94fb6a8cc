package invite

import (
	"context"
	"errors"
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/backoffice/lockout"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// The budgets of wrong codes are kept as the admin API's lockout keeps
// its own (internal/backoffice/lockout), per queue: one per address and
// one per network, so a guesser's many addresses in one network share
// one budget.

// DefaultAddressPolicy: 10 wrong codes within a minute lock an address
// for a minute, then 2, 4 ... up to an hour; remembered for a day. A
// person who mistypes a code a few times is never locked.
var DefaultAddressPolicy = lockout.DefaultPolicy

// DefaultNetworkPolicy: 30 wrong codes within a minute from one network
// (an IPv4 /24, an IPv6 /56; a shared network's addresses each count as
// their own) lock it the same way: more addresses buy a guesser at most
// 30 guesses a minute, then a few an hour.
var DefaultNetworkPolicy = lockout.Policy{MaxFailures: 30, Window: time.Minute, BaseLock: time.Minute, MaxLock: time.Hour, Memory: 24 * time.Hour}

// ErrLocked refuses a code from an address or network that guessed too
// many wrong ones (errors.As with *LockedError for how long).
var ErrLocked = errors.New("invite: too many wrong codes")

// LockedError is ErrLocked with the time left on the lock.
type LockedError struct{ RetryAfter time.Duration }

func (e *LockedError) Error() string { return ErrLocked.Error() }
func (e *LockedError) Unwrap() error { return ErrLocked }

// Guard counts wrong codes and locks out those who keep guessing.
type Guard struct {
	address, network *lockout.Lockout
	// locked are the budgets this replica saw locked, until when: a
	// locked guesser's next guesses cost Redis nothing.
	locked *lru.Cache[string, time.Time]
}

// lockedKept bounds the locks a replica remembers.
const lockedKept = 4096

// NewGuard returns a guard keeping its counts in rdb under the two
// policies (zero: the defaults).
func NewGuard(rdb redis.Scripter, perAddress, perNetwork lockout.Policy) (*Guard, error) {
	if perAddress == (lockout.Policy{}) {
		perAddress = DefaultAddressPolicy
	}
	if perNetwork == (lockout.Policy{}) {
		perNetwork = DefaultNetworkPolicy
	}
	a, err := lockout.New(rdb, perAddress)
	if err != nil {
		return nil, err
	}
	n, err := lockout.New(rdb, perNetwork)
	if err != nil {
		return nil, err
	}
	locked, _ := lru.New[string, time.Time](lockedKept) // a positive size cannot fail
	return &Guard{address: a, network: n, locked: locked}, nil
}

// Client is who brings a code: its address as the limits count it
// (clientip.Key) and its network ("": none known).
type Client struct {
	Address, Network string
}

// keys are c's budgets in queue: its address's, and its network's.
func (c Client) keys(queue string) (string, string) {
	addr, net := "", ""
	if c.Address != "" {
		addr = rediskeys.CodeGuesses(queue, "a:"+c.Address)
	}
	if c.Network != "" && c.Network != c.Address {
		net = rediskeys.CodeGuesses(queue, "n:"+c.Network)
	}
	return addr, net
}

// same is compared with itself: an attempt that only asks whether the
// budget is locked.
var same = []byte{0}

// Check reports a *LockedError while c's address or network is locked in
// queue, without counting anything.
func (g *Guard) Check(ctx context.Context, queue string, c Client) error {
	return g.each(ctx, queue, c, same)
}

// Wrong counts a wrong code of c's: a *LockedError when its address or
// network was locked already, else nil (the caller answers the wrong
// code; a lock this one earned refuses the next).
func (g *Guard) Wrong(ctx context.Context, queue string, c Client) error {
	return g.each(ctx, queue, c, []byte{1})
}

func (g *Guard) each(ctx context.Context, queue string, c Client, presented []byte) error {
	addr, net := c.keys(queue)
	var locked time.Duration
	now := time.Now()
	for _, x := range []struct {
		l   *lockout.Lockout
		key string
	}{{g.address, addr}, {g.network, net}} {
		if x.key == "" {
			continue
		}
		if until, ok := g.locked.Get(x.key); ok && until.After(now) {
			locked = max(locked, until.Sub(now))
			continue
		}
		res, err := x.l.AttemptKey(ctx, x.key, presented, same)
		if err != nil {
			return fmt.Errorf("invite: %w", err)
		}
		if res.RetryAfter > 0 {
			g.locked.Add(x.key, now.Add(res.RetryAfter))
		}
		if res.Verdict == lockout.Locked {
			locked = max(locked, res.RetryAfter)
		}
	}
	if locked > 0 {
		return &LockedError{RetryAfter: locked}
	}
	return nil
}
