package autorate

import (
	"math"
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	s := Settings{Enabled: true, RefillSize: 100, TargetP95: 500 * time.Millisecond, MaxErrorRate: 0.05}
	for _, tc := range []struct {
		name string
		s    Settings
		sig  Signal
		ok   bool
		want Verdict
	}{
		{"no signal", s, Signal{}, false, Hold},
		{"no targets", Settings{RefillSize: 100}, Signal{P95: time.Hour, ErrorRate: 1}, true, Hold},
		{"slow", s, Signal{P95: 501 * time.Millisecond}, true, Over},
		{"at target", s, Signal{P95: 500 * time.Millisecond, ErrorRate: 0.05}, true, Hold},
		{"near target", s, Signal{P95: 401 * time.Millisecond}, true, Hold},
		{"well within", s, Signal{P95: 350 * time.Millisecond, ErrorRate: 0.05}, true, Under},
		{"errors", s, Signal{P95: time.Millisecond, ErrorRate: 0.06}, true, Over},
		{"healthy", s, Signal{P95: 100 * time.Millisecond}, true, Under},
		{"latency only", Settings{RefillSize: 100, TargetP95: time.Second}, Signal{P95: time.Millisecond, ErrorRate: 1}, true, Under},
		{"errors only", Settings{RefillSize: 100, MaxErrorRate: 0.1}, Signal{P95: time.Hour, ErrorRate: 0.2}, true, Over},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Judge(tc.s, tc.sig, tc.ok); got != tc.want {
				t.Fatalf("Judge = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNext(t *testing.T) {
	s := Settings{Enabled: true, RefillSize: 100, MinRefill: 10, TargetP95: time.Second}
	just := Signal{P95: 1001 * time.Millisecond} // just over target: the gentlest cut
	for _, tc := range []struct {
		name    string
		s       Settings
		current int
		v       Verdict
		sig     Signal
		want    int
	}{
		{"hold", s, 57, Hold, Signal{}, 57},
		{"decrease just over target", s, 100, Over, just, 85},
		{"decrease in proportion", s, 100, Over, Signal{P95: 1600 * time.Millisecond}, 62},
		{"decrease at most halves", s, 100, Over, Signal{P95: time.Hour}, 50},
		{"decrease rounds down", s, 15, Over, just, 12},
		{"decrease stops at the floor", s, 11, Over, just, 10},
		{"increase by 5 %", s, 70, Under, Signal{}, 75},
		{"increase stops at refill_size", s, 98, Under, Signal{}, 100},
		{"at least one person", Settings{RefillSize: 10}, 3, Under, Signal{}, 4},
		{"refill_size lowered below current", s, 150, Hold, Signal{}, 100},
		{"floor above refill_size gives way", Settings{RefillSize: 5, MinRefill: 50}, 5, Over, just, 5},
		{"never zero", Settings{RefillSize: 3}, 1, Over, just, 1},
		{"below the floor climbs to it", s, 2, Hold, Signal{}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Next(tc.s, tc.current, tc.v, tc.sig); got != tc.want {
				t.Fatalf("Next(%d, %v, %v) = %d, want %d", tc.current, tc.v, tc.sig.P95, got, tc.want)
			}
		})
	}
}

func TestCut(t *testing.T) {
	s := Settings{RefillSize: 100, TargetP95: time.Second, MaxErrorRate: 0.1}
	for _, tc := range []struct {
		name string
		sig  Signal
		want float64
	}{
		{"just over target", Signal{P95: 1100 * time.Millisecond}, Decrease},
		{"twice the target", Signal{P95: 2 * time.Second}, 0.5},
		{"far over", Signal{P95: time.Minute}, DeepestDecrease},
		{"errors in proportion", Signal{P95: time.Millisecond, ErrorRate: 0.16}, 0.625},
		{"the deeper of the two", Signal{P95: 1250 * time.Millisecond, ErrorRate: 0.2}, 0.5},
		{"errors only, just over", Signal{ErrorRate: 0.11}, Decrease},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Cut(s, tc.sig); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("Cut = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNextStaysInBounds walks every start and verdict sequence prefix and
// checks the effective refill never leaves [floor, refill_size].
func TestNextStaysInBounds(t *testing.T) {
	for size := 1; size <= 60; size++ {
		for floor := 0; floor <= size+2; floor++ {
			s := Settings{RefillSize: size, MinRefill: floor, TargetP95: time.Second}
			lo := max(1, min(floor, size))
			for start := 0; start <= size+5; start++ {
				cur := start
				for i := range 40 {
					cur = Next(s, cur, Verdict((i*7+start)%3), Signal{P95: time.Duration(i) * 100 * time.Millisecond})
					if cur < lo || cur > size {
						t.Fatalf("size %d floor %d start %d: %d after %d steps", size, floor, start, cur, i+1)
					}
				}
			}
		}
	}
}

func TestDraining(t *testing.T) {
	s := Settings{RefillSize: 100, TargetP95: time.Second, MaxErrorRate: 0.1}
	over := Signal{P95: 3 * time.Second}
	for _, tc := range []struct {
		name    string
		sig     Signal
		v       Verdict
		stepP95 time.Duration
		want    Verdict
	}{
		{"no decrease before", over, Over, 0, Over},
		{"falling since the decrease", over, Over, 4 * time.Second, Hold},
		{"not falling enough", Signal{P95: 2900 * time.Millisecond}, Over, 3 * time.Second, Over},
		{"rising", over, Over, 2 * time.Second, Over},
		{"errors decrease anyway", Signal{P95: 3 * time.Second, ErrorRate: 0.2}, Over, 4 * time.Second, Over},
		{"other verdicts unchanged", Signal{P95: 100 * time.Millisecond}, Under, 4 * time.Second, Under},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Draining(s, tc.sig, tc.v, tc.stepP95); got != tc.want {
				t.Fatalf("Draining = %v, want %v", got, tc.want)
			}
		})
	}
}
