package forecast

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// A forecast costs about a millisecond of CPU and five Redis round trips,
// and any viewer may ask for one: the guard bounds what one credential
// can make a replica spend. Its limits and cache are this process's, not
// shared through Redis, so that a flood of forecasts costs no Redis call
// before it is refused; behind N replicas a credential gets N times as
// many, each replica the same bounded share.
const (
	// PerCredential forecasts a credential may ask for at once, and one
	// more each CredentialEvery: the back office asks for one when the
	// operator stops typing a refill size (300 ms), so a person never
	// meets the limit.
	PerCredential   = 20
	CredentialEvery = 250 * time.Millisecond
	// CacheFor is how long an answer for one (queue, refill size, lane)
	// is given again instead of made anew: the line moves by the second,
	// so a forecast a second old says what a new one would.
	CacheFor = time.Second
	// MaxCached bounds the answers kept, MaxCredentials the credentials
	// whose buckets are kept. Past either, the least recently used goes:
	// a bucket dropped would be full again after PerCredential ×
	// CredentialEvery (5 s) anyway, unless MaxCredentials others asked
	// within those seconds.
	MaxCached      = 1024
	MaxCredentials = 4096
)

// ErrRateLimited: the credential asked for too many forecasts; the
// error is a *LimitError saying when to ask again.
var ErrRateLimited = errors.New("forecast: too many forecasts for this credential")

// LimitError is ErrRateLimited with the wait until the next forecast.
type LimitError struct{ After time.Duration }

func (e *LimitError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", ErrRateLimited, e.After)
}
func (e *LimitError) Unwrap() error { return ErrRateLimited }

// Compute makes one forecast: Forecaster.Forecast, in production.
type Compute func(ctx context.Context, q string, refill int, lane string) (Result, error)

// Guard answers forecasts within a per-credential limit, from a cache of
// answers under a second old.
type Guard struct {
	compute Compute
	now     func() time.Time

	mu      sync.Mutex
	buckets *simplelru.LRU[string, *rate.Limiter]
	answers *simplelru.LRU[string, cached]
	filling map[string]*fill
}

// fill is a forecast being made; done closes when res and err are set.
type fill struct {
	done chan struct{}
	res  Result
	err  error
}

type cached struct {
	res   Result
	until time.Time
}

// NewGuard returns a guard in front of compute; now is the clock (nil:
// time.Now).
func NewGuard(compute Compute, now func() time.Time) *Guard {
	if now == nil {
		now = time.Now
	}
	// Neither fails with a positive size.
	buckets, _ := simplelru.NewLRU[string, *rate.Limiter](MaxCredentials, nil)
	answers, _ := simplelru.NewLRU[string, cached](MaxCached, nil)
	return &Guard{compute: compute, now: now, buckets: buckets, answers: answers, filling: map[string]*fill{}}
}

// Forecast answers the forecast of q at refill (lane: one lane's, "" the
// whole line) for credential: a *LimitError past its limit, else the
// answer made within the last CacheFor, else a new one. An answer from
// the cache still takes from the credential's bucket: the limit is on
// asking, so that it reads the same whatever others asked.
func (g *Guard) Forecast(ctx context.Context, credential, q string, refill int, lane string) (Result, error) {
	now := g.now()
	key := q + "\x00" + strconv.Itoa(refill) + "\x00" + lane
	g.mu.Lock()
	if wait := g.take(credential, now); wait > 0 {
		g.mu.Unlock()
		return Result{}, &LimitError{After: wait}
	}
	if c, ok := g.answers.Get(key); ok && now.Before(c.until) {
		g.mu.Unlock()
		return c.res, nil
	}
	// Callers that miss at once wait for one forecast, each as long as
	// its ctx lets it: a burst of the same question costs one.
	f, waiting := g.filling[key]
	if !waiting {
		f = &fill{done: make(chan struct{})}
		g.filling[key] = f
	}
	g.mu.Unlock()
	if waiting {
		select {
		case <-f.done:
			return f.res, f.err
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
	f.res, f.err = g.compute(ctx, q, refill, lane)
	g.mu.Lock()
	delete(g.filling, key)
	if f.err == nil {
		g.answers.Add(key, cached{res: f.res, until: now.Add(CacheFor)})
	}
	g.mu.Unlock()
	close(f.done)
	return f.res, f.err
}

// take takes one forecast from credential's bucket, or none: then it
// returns how long until there is one. g.mu is held.
func (g *Guard) take(credential string, now time.Time) time.Duration {
	lim, ok := g.buckets.Get(credential)
	if !ok {
		lim = rate.NewLimiter(rate.Every(CredentialEvery), PerCredential)
		g.buckets.Add(credential, lim)
	}
	r := lim.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return wait
	}
	return 0
}
