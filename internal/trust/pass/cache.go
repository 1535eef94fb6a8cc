package pass

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// CurrentFunc reports whether the admission a verified pass names is still
// current (false: revoked), or an error when it cannot tell now.
type CurrentFunc func(ctx context.Context, token string, c Claims) (bool, error)

// ErrExpired means a pass's exp has passed.
var ErrExpired = fmt.Errorf("%w: expired", ErrInvalid)

// Cache remembers the passes that verified, so a gate checks the pass of
// each request with a map lookup instead of an Ed25519 verification (tens
// of µs). It is safe because the key is the whole token and a token is
// cached only once its signature and claims verified: no other token can
// hit an entry. A cached pass opens until its exp. Where current is given,
// it is asked again once recheck has passed since the last answer, so a
// revoked pass stops opening within recheck (plus the time one check
// takes); meanwhile only one request per pass and recheck period pays for
// the check.
//
// The passes are held in golang-lru's Cache, not its expirable LRU: that
// one gives every entry the same time to live and reads time.Now itself,
// where a pass expires at its own exp on the cache's clock. Entries are
// read with Peek, under a read lock, so that the requests of many passes
// never wait on one another; when full, the cache drops the pass cached
// first (most often the next to expire, or expired already), which costs
// it one verification more if it comes again: never a wrong answer.
type Cache struct {
	verify  func(string) (Claims, error)
	current CurrentFunc
	recheck time.Duration
	now     func() time.Time
	entries *lru.Cache[string, *cacheEntry]
}

type cacheEntry struct {
	claims  Claims
	checked atomic.Int64 // UnixNano of the last current answer
}

// CacheOption configures NewCache.
type CacheOption func(*Cache)

// WithClock makes the cache read the time from now instead of time.Now:
// for tests that step over a recheck period or a pass's exp instead of
// sleeping through it.
func WithClock(now func() time.Time) CacheOption {
	return func(c *Cache) { c.now = now }
}

// NewCache returns a cache over v of at most max passes. current may be
// nil: passes then open until their exp (offline verification).
func NewCache(v *Verifier, current CurrentFunc, recheck time.Duration, max int, opts ...CacheOption) (*Cache, error) {
	if v == nil || max < 1 || (current != nil && recheck <= 0) {
		return nil, errors.New("pass: a cache needs a verifier, a positive size and, with current, a positive recheck")
	}
	entries, err := lru.New[string, *cacheEntry](max)
	if err != nil {
		return nil, fmt.Errorf("pass: %w", err)
	}
	c := &Cache{verify: v.Verify, current: current, recheck: recheck, now: time.Now, entries: entries}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Check returns the claims of token if it opens now: ErrInvalid (with its
// reason), ErrExpired or ErrRevoked when not, or current's error when the
// revocation check could not be made.
func (c *Cache) Check(ctx context.Context, token string) (Claims, error) {
	now := c.now()
	e, _ := c.entries.Peek(token)
	if e == nil {
		claims, err := c.verify(token)
		if err != nil {
			return Claims{}, err
		}
		e = &cacheEntry{claims: claims}
		if c.current == nil {
			c.add(token, e) // nothing to re-check: cached as it is
		}
	}
	if !now.Before(e.claims.Expires) {
		c.drop(token)
		return Claims{}, ErrExpired
	}
	if c.current == nil {
		return e.claims, nil
	}
	last := e.checked.Load()
	if last != 0 && now.UnixNano()-last < int64(c.recheck) {
		return e.claims, nil
	}
	// One request asks; the ones that come while it does still see the
	// last answer, which is younger than recheck plus one check.
	if last != 0 && !e.checked.CompareAndSwap(last, now.UnixNano()) {
		return e.claims, nil
	}
	ok, err := c.current(ctx, token, e.claims)
	if err != nil {
		e.checked.Store(last) // the next request tries again
		return Claims{}, err
	}
	if !ok {
		c.drop(token)
		return Claims{}, ErrRevoked
	}
	if last == 0 {
		e.checked.Store(now.UnixNano())
		c.add(token, e)
	}
	return e.claims, nil
}

// Offline returns the claims of token if it opens by what this process
// holds alone: a cached pass until its exp, another once its signature,
// issuer and validity verify. It asks nothing (no revocation check): it
// is for a gate whose revocation check cannot be made now (gate.FailClosed).
func (c *Cache) Offline(token string) (Claims, error) {
	e, _ := c.entries.Peek(token)
	if e == nil {
		return c.verify(token)
	}
	if !c.now().Before(e.claims.Expires) {
		return Claims{}, ErrExpired
	}
	return e.claims, nil
}

// add caches e under token; when the cache is full, the pass cached first
// goes.
func (c *Cache) add(token string, e *cacheEntry) {
	c.entries.Add(token, e)
}

func (c *Cache) drop(token string) {
	c.entries.Remove(token)
}

// Len is the number of cached passes.
func (c *Cache) Len() int {
	return c.entries.Len()
}
