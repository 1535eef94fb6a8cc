package queue

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// adaptOn turns the controller on for q with a floor.
func adaptOn(t *testing.T, s *Store, q string, floor int) {
	t.Helper()
	err := NewInspector(s).UpdateSettings(context.Background(), q, Update{AdaptEnabled: ptr(true), MinRefillSize: ptr(floor),
		OriginTargetP95: ptr(500 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
}

// TestProposalAppliedOnceAcrossReplicas: two replicas (two stores on one
// Redis) each propose a step from the same reading for the same interval,
// many times over, racing; the compare-and-set stores exactly one step.
func TestProposalAppliedOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	a, q, rdb := newStore(t, Settings{RefillSize: 100, RefillInterval: time.Hour, SessionTTL: time.Hour})
	b, err := NewStore(rdb, []string{q}, a.defaults, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	adaptOn(t, a, q, 10)
	ctx := context.Background()
	for step, want := range []int{70, 49, 34} {
		st, err := a.Adapt(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		forceNextInterval(t, rdb, q)
		p := Proposal{Refill: want, Base: st.RefillEffective}
		var mu sync.Mutex
		adapted, applied := 0, 0
		var wg sync.WaitGroup
		for i := range 20 {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := s.TickWith(ctx, q, p)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if res.Applied {
					applied++
					if res.Budget != int64(want) {
						t.Errorf("step %d: budget %d, want %d", step, res.Budget, want)
					}
				}
				if res.Adapted {
					adapted++
				}
			}()
		}
		wg.Wait()
		if applied != 1 || adapted != 1 {
			t.Fatalf("step %d: %d ticks applied, %d adapted; want 1 and 1", step, applied, adapted)
		}
		// A second proposal from the same, now stale, reading changes nothing.
		forceNextInterval(t, rdb, q)
		res, err := b.TickWith(ctx, q, Proposal{Refill: 1, Base: st.RefillEffective})
		if err != nil {
			t.Fatal(err)
		}
		if res.Adapted || res.Budget != int64(want) {
			t.Fatalf("stale proposal: %+v, want budget %d kept", res, want)
		}
	}
}

// TestAdaptOffRestoresRefillSize: switched off, refill_size is the budget
// at once (info, the ETA, the next tick), and a proposal is ignored.
func TestAdaptOffRestoresRefillSize(t *testing.T) {
	t.Parallel()
	s, q, rdb := newStore(t, Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour})
	ctx := context.Background()
	adaptOn(t, s, q, 2)
	for i := range 40 {
		enter(t, s, q, "u"+string(rune('A'+i)))
	}
	forceNextInterval(t, rdb, q)
	if res, err := s.TickWith(ctx, q, Proposal{Refill: 4, Base: 10}); err != nil || !res.Adapted || res.Moved != 4 {
		t.Fatalf("tick with proposal 4: %+v, %v", res, err)
	}
	info, err := s.Info(ctx, q)
	if err != nil || info.RefillEffective != 4 || info.Settings.RefillSize != 10 {
		t.Fatalf("info while adapting: effective %d, refill_size %d, %v", info.RefillEffective, info.Settings.RefillSize, err)
	}
	// The ETA counts the effective refill: u19, at place 6, waits one more
	// full refill of 4 (places 1-4 go next tick, 5-8 the one after).
	if tk := status(t, s, q, "u"+string(rune('A'+19))); tk.TicksAhead != 1 || tk.RefillSize != 4 {
		t.Fatalf("ticket while adapting: position %d, ticks ahead %d, refill %d; want refill 4, 1 tick ahead", tk.Position, tk.TicksAhead, tk.RefillSize)
	}

	if err := NewInspector(s).UpdateSettings(ctx, q, Update{AdaptEnabled: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	info, err = s.Info(ctx, q)
	if err != nil || info.RefillEffective != 10 {
		t.Fatalf("info switched off: effective %d, %v; want 10 at once", info.RefillEffective, err)
	}
	if tk := status(t, s, q, "u"+string(rune('A'+19))); tk.RefillSize != 10 || tk.TicksAhead != 0 {
		t.Fatalf("ticket switched off: %+v, want refill 10, next tick", tk)
	}
	forceNextInterval(t, rdb, q)
	res, err := s.TickWith(ctx, q, Proposal{Refill: 3, Base: 10})
	if err != nil || res.Adapted || res.Budget != 10 || res.Moved != 10 {
		t.Fatalf("tick switched off: %+v, %v; want budget 10, proposal ignored", res, err)
	}
	if st, err := s.Adapt(ctx, q); err != nil || st.Enabled || st.RefillEffective != 10 {
		t.Fatalf("adapt switched off: %+v, %v", st, err)
	}
	// Switched on again, it starts from refill_size.
	adaptOn(t, s, q, 2)
	if st, err := s.Adapt(ctx, q); err != nil || st.RefillEffective != 10 {
		t.Fatalf("adapt on again: %+v, %v; want to start from 10", st, err)
	}
}

// TestEffectiveRefillStaysInBounds: whatever is proposed, the stored
// effective refill stays within [min_refill_size, refill_size], also when
// the operator lowers refill_size under it; the history keeps each
// interval's budget.
func TestEffectiveRefillStaysInBounds(t *testing.T) {
	t.Parallel()
	s, q, rdb := newStore(t, Settings{RefillSize: 20, RefillInterval: time.Hour, SessionTTL: time.Hour})
	ctx := context.Background()
	adaptOn(t, s, q, 5)
	var budgets []int64
	for _, p := range []int{1, 0, 1000, 3, -7, 12} {
		st, err := s.Adapt(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		forceNextInterval(t, rdb, q)
		res, err := s.TickWith(ctx, q, Proposal{Refill: p, Base: st.RefillEffective})
		if err != nil {
			t.Fatal(err)
		}
		if res.Budget < 5 || res.Budget > 20 {
			t.Fatalf("proposal %d: budget %d outside [5, 20]", p, res.Budget)
		}
		budgets = append(budgets, res.Budget)
	}
	if err := NewInspector(s).UpdateSettings(ctx, q, Update{RefillSize: ptr(8)}); err != nil {
		t.Fatal(err)
	}
	if info, err := s.Info(ctx, q); err != nil || info.RefillEffective != 8 {
		t.Fatalf("refill_size lowered to 8 under effective 12: effective %d, %v", info.RefillEffective, err)
	}
	budgets = append(budgets, tick(t, s, rdb, q).Budget)
	tick(t, s, rdb, q)
	points, err := NewInspector(s).History(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	// Each entry closes the interval a tick opened, with its budget.
	want := budgets
	if len(points) != len(want) {
		t.Fatalf("%d history points, want %d", len(points), len(want))
	}
	for i, p := range points {
		if p.Refill != want[i] {
			t.Errorf("history %d: refill %d, want %d (all %v)", i, p.Refill, want[i], want)
		}
	}
}

func TestValidateAdapt(t *testing.T) {
	for _, tc := range []struct {
		name, field string
		u           Update
	}{
		{"negative target", "origin_target_p95_ms", Update{OriginTargetP95: ptr(-time.Millisecond)}},
		{"target too long", "origin_target_p95_ms", Update{OriginTargetP95: ptr(MaxOriginTargetP95 + time.Millisecond)}},
		{"error rate > 1", "origin_max_error_rate", Update{OriginMaxErrorRate: ptr(1.01)}},
		{"error rate < 0", "origin_max_error_rate", Update{OriginMaxErrorRate: ptr(-0.1)}},
		{"floor too high", "min_refill_size", Update{MinRefillSize: ptr(MaxRefillSize + 1)}},
		{"relative url", "origin_probe_url", Update{OriginProbeURL: ptr("/healthz")}},
		{"ftp url", "origin_probe_url", Update{OriginProbeURL: ptr("ftp://shop.example/")}},
		{"url with a login", "origin_probe_url", Update{OriginProbeURL: ptr("https://a:b@shop.example/")}},
	} {
		var fe *FieldError
		if err := tc.u.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want a FieldError for %s", tc.name, err, tc.field)
		}
	}
	ok := Update{OriginTargetP95: ptr(time.Second), OriginMaxErrorRate: ptr(0.5), MinRefillSize: ptr(1),
		OriginProbeURL: ptr("http://orders.internal:8081/healthz"), AdaptEnabled: ptr(true)}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}
