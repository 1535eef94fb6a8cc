package forecast

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// guardClock is a clock the test moves by hand.
type guardClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *guardClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *guardClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// countingGuard is a guard in front of real forecasts of a real queue,
// counting the forecasts it makes.
func countingGuard(t *testing.T) (*Guard, *guardClock, string, *atomic.Int64) {
	s, q := startedQueue(t, queue.Settings{RefillSize: 10, RefillInterval: time.Second, SessionTTL: time.Hour})
	for i := range 50 {
		if _, err := s.Enter(context.Background(), q, queue.Entry{Caller: queue.Caller{User: fmt.Sprint("u", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	var made atomic.Int64
	clock := &guardClock{t: time.Date(2026, 12, 24, 9, 0, 0, 0, time.UTC)}
	g := NewGuard(func(ctx context.Context, q string, refill int, lane string) (Result, error) {
		made.Add(1)
		return Forecaster{Store: queue.NewInspector(s)}.Forecast(ctx, q, refill, lane)
	}, clock.now)
	return g, clock, q, &made
}

// TestGuardLimitsACredential: 10,000 forecasts asked at once by one
// credential (from 50 goroutines) make one forecast and are mostly
// refused with a wait; another credential is not refused for it; the
// bucket fills again with time.
func TestGuardLimitsACredential(t *testing.T) {
	g, clock, q, made := countingGuard(t)
	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 200 {
				_, err := g.Forecast(context.Background(), "token:dashboard", q, 10, "")
				var le *LimitError
				switch {
				case err == nil:
					ok.Add(1)
				case errors.As(err, &le) && errors.Is(err, ErrRateLimited) && le.After > 0 && le.After <= CredentialEvery:
					limited.Add(1)
				default:
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if ok.Load() != PerCredential || limited.Load() != 10_000-PerCredential {
		t.Fatalf("answered %d, limited %d; want %d and the rest", ok.Load(), limited.Load(), PerCredential)
	}
	// Asked for one (queue, refill, lane) at one instant: one is made.
	if m := made.Load(); m != 1 {
		t.Fatalf("%d forecasts made for %d answers", m, ok.Load())
	}
	if _, err := g.Forecast(context.Background(), "oidc:kim@example.com", q, 10, ""); err != nil {
		t.Fatalf("another credential: %v", err)
	}
	clock.add(CredentialEvery)
	if _, err := g.Forecast(context.Background(), "token:dashboard", q, 10, ""); err != nil {
		t.Fatalf("after %s: %v", CredentialEvery, err)
	}

	// Each a refill size of its own, so that none is cached: the limit
	// alone bounds what is made.
	before := made.Load()
	clock.add(PerCredential * CredentialEvery)
	for refill := range 1000 {
		_, _ = g.Forecast(context.Background(), "token:other", q, refill+1, "")
	}
	if m := made.Load() - before; m != PerCredential {
		t.Fatalf("1000 refill sizes made %d forecasts, want %d", m, PerCredential)
	}
}

// TestGuardCachesForASecond: within CacheFor the same question gets the
// same answer without a forecast made, even from other credentials;
// after it, a new one; another refill size or lane is its own question.
func TestGuardCachesForASecond(t *testing.T) {
	g, clock, q, made := countingGuard(t)
	ctx := context.Background()
	first, err := g.Forecast(ctx, "a", q, 7, "")
	if err != nil {
		t.Fatal(err)
	}
	clock.add(CacheFor - time.Millisecond)
	for i := range 10 {
		got, err := g.Forecast(ctx, fmt.Sprint("cred", i), q, 7, "")
		if err != nil || !reflect.DeepEqual(got, first) {
			t.Fatalf("within the second: %+v, %v; want %+v", got, err, first)
		}
	}
	if made.Load() != 1 {
		t.Fatalf("%d forecasts made within the second, want 1", made.Load())
	}
	if _, err := g.Forecast(ctx, "a", q, 8, ""); err != nil || made.Load() != 2 {
		t.Fatalf("another refill size: made %d, %v", made.Load(), err)
	}
	clock.add(time.Millisecond)
	if _, err := g.Forecast(ctx, "a", q, 7, ""); err != nil || made.Load() != 3 {
		t.Fatalf("a second later: made %d, %v", made.Load(), err)
	}
	// An unknown lane is refused, and the refusal is not kept.
	for range 2 {
		if _, err := g.Forecast(ctx, "a", q, 7, "nope"); !errors.Is(err, ErrUnknownLane) {
			t.Fatalf("unknown lane: %v", err)
		}
	}
	if made.Load() != 5 {
		t.Fatalf("refusals made %d forecasts in all, want 5", made.Load())
	}
}
