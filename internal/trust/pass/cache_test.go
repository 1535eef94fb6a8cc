package pass

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testClock is the time a cache reads in a test: real time, moved on by
// what the test steps over instead of sleeping through it.
type testClock struct{ ahead atomic.Int64 }

func (c *testClock) now() time.Time       { return time.Now().Add(time.Duration(c.ahead.Load())) }
func (c *testClock) step(d time.Duration) { c.ahead.Add(int64(d)) }

// counting wraps a cache's verify to count signature checks.
func counting(c *Cache) *atomic.Int64 {
	var n atomic.Int64
	verify := c.verify
	c.verify = func(tok string) (Claims, error) {
		n.Add(1)
		return verify(tok)
	}
	return &n
}

func TestCacheVerifiesOnceAndRechecks(t *testing.T) {
	p := ring(t, genPEM(t))
	now := time.UnixMilli(time.Now().UnixMilli())
	tok, _ := p.Issue("q", "a:m", now, now.Add(time.Hour))

	var asked atomic.Int64
	var revoked atomic.Bool
	current := func(_ context.Context, token string, c Claims) (bool, error) {
		asked.Add(1)
		if token != tok || c.Subject != "a:m" {
			t.Errorf("current asked about %q / %+v", token, c)
		}
		return !revoked.Load(), nil
	}
	const recheck = 200 * time.Millisecond
	var clock testClock
	c, err := NewCache(p.Verifier, current, recheck, 100, WithClock(clock.now))
	if err != nil {
		t.Fatal(err)
	}
	verified := counting(c)

	// Many concurrent requests with one pass: one signature check (or a
	// few, when they race before the first is cached) and one revocation
	// check.
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if _, err := c.Check(ctx, tok); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if v, a := verified.Load(), asked.Load(); v > 50 || a > v {
		t.Fatalf("1000 checks made %d signature checks and %d revocation checks", v, a)
	}
	settledV, settledA := verified.Load(), asked.Load()
	for range 100 {
		if _, err := c.Check(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if verified.Load() != settledV || asked.Load() != settledA {
		t.Fatalf("cached checks still verified (%d) or asked (%d)", verified.Load()-settledV, asked.Load()-settledA)
	}

	// Revoked: still open until the recheck period has passed, then
	// refused, and forgotten.
	revoked.Store(true)
	if _, err := c.Check(ctx, tok); err != nil {
		t.Fatalf("revoked, within the recheck period: %v", err)
	}
	clock.step(recheck)
	if _, err := c.Check(ctx, tok); !errors.Is(err, ErrRevoked) {
		t.Fatalf("revoked, the recheck period over: %v", err)
	}
	if c.Len() != 0 {
		t.Fatalf("a revoked pass stayed cached")
	}
}

func TestCacheRetriesAfterAnError(t *testing.T) {
	p := ring(t, genPEM(t))
	now := time.Now()
	tok, _ := p.Issue("q", "a:m", now, now.Add(time.Hour))
	down := errors.New("redis down")
	var fail atomic.Bool
	fail.Store(true)
	c, _ := NewCache(p.Verifier, func(context.Context, string, Claims) (bool, error) {
		if fail.Load() {
			return false, down
		}
		return true, nil
	}, time.Hour, 10)
	if _, err := c.Check(context.Background(), tok); !errors.Is(err, down) {
		t.Fatalf("got %v, want the store's error", err)
	}
	fail.Store(false)
	if _, err := c.Check(context.Background(), tok); err != nil {
		t.Fatalf("after the store came back: %v", err)
	}
}

func TestCacheRefusesExpiredAndForged(t *testing.T) {
	p := ring(t, genPEM(t))
	now := time.Now()
	// exp is truncated to the second: between 0.5 and 1.5 s from now.
	short, _ := p.Issue("q", "a:m", now.Add(-time.Minute), now.Add(1500*time.Millisecond))
	var clock testClock
	c, _ := NewCache(p.Verifier, nil, 0, 10, WithClock(clock.now))
	ctx := context.Background()
	if _, err := c.Check(ctx, short); err != nil {
		t.Fatal(err)
	}
	// One character of the signature's R half changed.
	sig := strings.LastIndexByte(short, '.') + 10
	swap := byte('A')
	if short[sig] == 'A' {
		swap = 'B'
	}
	forged := short[:sig] + string(swap) + short[sig+1:]
	if _, err := c.Check(ctx, forged); !errors.Is(err, ErrInvalid) {
		t.Fatalf("forged signature of a cached pass: %v", err)
	}
	clock.step(2 * time.Second)
	if _, err := c.Check(ctx, short); !errors.Is(err, ErrExpired) {
		t.Fatalf("after exp: %v", err)
	}
}

func TestCacheStaysBounded(t *testing.T) {
	p := ring(t, genPEM(t))
	now := time.Now()
	c, _ := NewCache(p.Verifier, nil, 0, 50)
	for i := range 500 {
		tok, _ := p.Issue("q", "a:m", now, now.Add(time.Hour))
		if _, err := c.Check(context.Background(), tok); err != nil {
			t.Fatalf("pass %d: %v", i, err)
		}
		if c.Len() > 50 {
			t.Fatalf("cache of %d entries, max 50", c.Len())
		}
	}
}
