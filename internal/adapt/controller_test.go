package adapt

import (
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
	for _, tc := range []struct {
		name    string
		s       Settings
		current int
		v       Verdict
		want    int
	}{
		{"hold", s, 57, Hold, 57},
		{"decrease", s, 100, Over, 70},
		{"decrease rounds down", s, 15, Over, 10},
		{"decrease stops at the floor", s, 12, Over, 10},
		{"increase by 5 %", s, 70, Under, 75},
		{"increase stops at refill_size", s, 98, Under, 100},
		{"at least one person", Settings{RefillSize: 10}, 3, Under, 4},
		{"refill_size lowered below current", s, 150, Hold, 100},
		{"floor above refill_size gives way", Settings{RefillSize: 5, MinRefill: 50}, 5, Over, 5},
		{"never zero", Settings{RefillSize: 3}, 1, Over, 1},
		{"below the floor climbs to it", s, 2, Hold, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Next(tc.s, tc.current, tc.v); got != tc.want {
				t.Fatalf("Next(%d, %v) = %d, want %d", tc.current, tc.v, got, tc.want)
			}
		})
	}
}

// TestNextStaysInBounds walks every start and verdict sequence prefix and
// checks the effective refill never leaves [floor, refill_size].
func TestNextStaysInBounds(t *testing.T) {
	for size := 1; size <= 60; size++ {
		for floor := 0; floor <= size+2; floor++ {
			s := Settings{RefillSize: size, MinRefill: floor}
			lo := max(1, min(floor, size))
			for start := 0; start <= size+5; start++ {
				cur := start
				for i := range 40 {
					cur = Next(s, cur, Verdict((i*7+start)%3))
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
