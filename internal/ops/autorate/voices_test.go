package autorate

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestOneVoiceCannotMoveTheSignal: over generated
// windows (fixed seed) of 2 to 40 admissions answered healthily, one
// more admission with any number of answers, however slow or failed,
// leaves the p95 within the healthy answers' slowest and the error rate
// within the healthy admissions' worst. Pooled as before, its answers
// made the p95 and the error rate.
func TestOneVoiceCannotMoveTheSignal(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 9))
	now := time.Now()
	for i := range 500 {
		var s []sample
		voices := 2 + rng.IntN(39)
		var slowest time.Duration
		worstErr := 0.0
		for v := range voices {
			n, bad := 1+rng.IntN(20), 0
			for range n {
				took := time.Duration(1+rng.IntN(50)) * time.Millisecond
				slowest = max(slowest, took)
				isBad := rng.IntN(50) == 0
				if isBad {
					bad++
				}
				s = append(s, sample{at: now, took: took, bad: isBad, voice: fmt.Sprint("sub-", v)})
			}
			worstErr = max(worstErr, float64(bad)/float64(n))
		}
		for range 1 + rng.IntN(2000) {
			s = append(s, sample{at: now, took: time.Duration(rng.IntN(600)) * time.Second, bad: rng.IntN(2) == 0, voice: "holder"})
		}
		rng.Shuffle(len(s), func(a, b int) { s[a], s[b] = s[b], s[a] })
		sig, ok := byVoice(s)
		if !ok || sig.P95 > slowest || sig.ErrorRate > worstErr+1e-9 {
			t.Fatalf("case %d (%d voices): %+v %v, want p95 ≤ %s and errors ≤ %.3f", i, voices, sig, ok, slowest, worstErr)
		}
	}
}

// TestVoices: the p95 weighs admissions, not requests; everybody slow is
// seen; one admission alone steers nothing.
func TestVoices(t *testing.T) {
	now := time.Now()
	at := func(voice string, took time.Duration, n int, bad bool) []sample {
		var s []sample
		for range n {
			s = append(s, sample{at: now, took: took, bad: bad, voice: voice})
		}
		return s
	}
	// Only one admission: not enough to judge, whatever it says.
	if _, ok := byVoice(at("a", time.Minute, 500, true)); ok {
		t.Fatal("one admission's answers steer the rate")
	}
	// Everybody slow and failing: seen.
	var all []sample
	for v := range 5 {
		all = append(all, at(fmt.Sprint(v), 2*time.Second, 10, v%2 == 0)...)
	}
	if sig, ok := byVoice(all); !ok || sig.P95 != 2*time.Second || sig.ErrorRate != 0.5 {
		t.Fatalf("everybody slow: %+v %v, want 2s and errors 0.5 (2 of the 4 others)", sig, ok)
	}
	// Three admissions, one of them 100 fast answers: a busy fast user
	// weighs as one, so the slow two (one set aside) still show.
	s := append(at("busy", time.Millisecond, 100, false), at("b", time.Second, 2, false)...)
	s = append(s, at("c", time.Second, 2, false)...)
	if sig, ok := byVoice(s); !ok || sig.P95 != time.Second {
		t.Fatalf("a busy fast user: %+v %v, want the others' 1s", sig, ok)
	}
	// Answers without a voice (none came with an admission) are one each.
	if sig, ok := byVoice(append(at("", 5*time.Millisecond, 10, false), at("holder", time.Hour, 50, true)...)); !ok || sig.P95 != 5*time.Millisecond || sig.ErrorRate != 0 {
		t.Fatalf("anonymous answers: %+v %v", sig, ok)
	}
}
