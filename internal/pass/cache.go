package pass

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/internal/localmap"
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
type Cache struct {
	verify  func(string) (Claims, error)
	current CurrentFunc
	recheck time.Duration
	max     int

	mu      sync.RWMutex
	entries map[string]*cacheEntry
}

type cacheEntry struct {
	claims  Claims
	checked atomic.Int64 // UnixNano of the last current answer
}

// NewCache returns a cache over v of at most max passes. current may be
// nil: passes then open until their exp (offline verification).
func NewCache(v *Verifier, current CurrentFunc, recheck time.Duration, max int) (*Cache, error) {
	if v == nil || max < 1 || (current != nil && recheck <= 0) {
		return nil, errors.New("pass: a cache needs a verifier, a positive size and, with current, a positive recheck")
	}
	return &Cache{verify: v.Verify, current: current, recheck: recheck, max: max, entries: make(map[string]*cacheEntry)}, nil
}

// Check returns the claims of token if it opens now: ErrInvalid (with its
// reason), ErrExpired or ErrRevoked when not, or current's error when the
// revocation check could not be made.
func (c *Cache) Check(ctx context.Context, token string) (Claims, error) {
	now := time.Now()
	c.mu.RLock()
	e := c.entries[token]
	c.mu.RUnlock()
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
	c.mu.RLock()
	e := c.entries[token]
	c.mu.RUnlock()
	if e == nil {
		return c.verify(token)
	}
	if !time.Now().Before(e.claims.Expires) {
		return Claims{}, ErrExpired
	}
	return e.claims, nil
}

// add caches e under token, making room first when the cache is full:
// expired entries go, and if that is not enough, arbitrary ones (which
// costs them one verification more).
func (c *Cache) add(token string, e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		now := time.Now()
		localmap.Evict(c.entries, c.max*9/10+1, func(old *cacheEntry) bool { return !now.Before(old.claims.Expires) })
	}
	c.entries[token] = e
}

func (c *Cache) drop(token string) {
	c.mu.Lock()
	delete(c.entries, token)
	c.mu.Unlock()
}

// Len is the number of cached passes.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
