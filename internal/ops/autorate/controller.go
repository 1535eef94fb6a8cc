// Package autorate lets the order page's health drive a queue's admission
// rate: an AIMD controller (this file, pure), the order page's
// signals it reads (the reverse-proxy gate's view of upstream answers, a
// probe one replica at a time, or what the site pushes), and the runner
// that proposes each tick's effective refill to the store.
//
// The store applies a proposal atomically with the tick (tick.lua), as a
// compare-and-set on the effective refill the proposal was based on, so
// two replicas never step twice in one interval.
package autorate

import (
	"math"
	"time"
)

// Decrease is the gentlest cut: the factor the effective refill is
// multiplied by when the order page is just over target. Further over, the
// cut is deeper, in proportion (target / p95, or the error rate's
// likewise), down to DeepestDecrease. A fixed 0.7 cut a rate a little
// past what the page serves to 70 % of it each time, and the page served
// 81 % of what it could (AIMD's mean is about (1 + cut) / 2 of the peak);
// a fixed 0.85 came down from a start far over target too slowly
// (scripts/adapt.sh, docs/PERFORMANCE.md).
const Decrease = 0.85

// DeepestDecrease bounds the proportional cut: a p95 many times its
// target is mostly the backlog, which a halved rate already drains.
const DeepestDecrease = 0.5

// IncreaseFraction of the operator's refill_size is added per healthy
// interval (at least one person): additive increase climbs back in about
// twenty intervals from the floor, slowly enough that the order page's answer
// to each step is seen before the next.
const IncreaseFraction = 0.05

// Healthy is the share of origin_target_p95_ms under which the order page is
// healthy and the refill climbs; between it and the target the refill
// holds. Without this band the refill climbs until the target is crossed,
// and since the page shows a step only seconds later (users read the
// page before they order), it overshoots each time and drops back.
const Healthy = 0.7

// Settings are a queue's controller settings (the queue's config HASH).
type Settings struct {
	Enabled bool
	// RefillSize is the operator's refill_size: the ceiling.
	RefillSize int
	// MinRefill is min_refill_size, the floor (clamped to RefillSize).
	MinRefill int
	// TargetP95 is origin_target_p95_ms; MaxErrorRate origin_max_error_rate.
	TargetP95    time.Duration
	MaxErrorRate float64
}

// Signal is what the order page's answers said over the last window.
type Signal struct {
	P95       time.Duration
	ErrorRate float64 // 0..1
	Samples   int     // answers seen (for a pushed report: 0, it is trusted as is)
}

// Verdict is the controller's reading of a signal against the targets.
type Verdict int

const (
	Hold  Verdict = iota // no signal, or near the target: keep the rate
	Over                 // over target: decrease
	Under                // well within target: increase toward refill_size
)

// Judge reads sig against s's targets: Over past either, Under when the
// p95 is at most Healthy × its target (and the errors within theirs),
// Hold in between. A target of 0 is not checked; with neither set there
// is nothing to steer by and the verdict is Hold.
func Judge(s Settings, sig Signal, ok bool) Verdict {
	if !ok || (s.TargetP95 <= 0 && s.MaxErrorRate <= 0) {
		return Hold
	}
	if s.TargetP95 > 0 && sig.P95 > s.TargetP95 {
		return Over
	}
	if s.MaxErrorRate > 0 && sig.ErrorRate > s.MaxErrorRate {
		return Over
	}
	if s.TargetP95 > 0 && float64(sig.P95) > Healthy*float64(s.TargetP95) {
		return Hold
	}
	return Under
}

// Draining turns an Over verdict into Hold while the page recovers: its
// p95 is over target only for latency (errors within theirs), and at
// most 0.95 × stepP95, the p95 that made the last decrease (0: none, or
// not known). After a decrease the backlog the page built up takes a
// while to drain, and every request waits behind it; stepping down again
// for that would cut the rate far below what the page serves (the first
// runs fell to the floor). A p95 that stops falling, or errors, still
// decrease.
func Draining(s Settings, sig Signal, v Verdict, stepP95 time.Duration) Verdict {
	if v != Over || stepP95 <= 0 || (s.MaxErrorRate > 0 && sig.ErrorRate > s.MaxErrorRate) {
		return v
	}
	if float64(sig.P95) <= 0.95*float64(stepP95) {
		return Hold
	}
	return v
}

// Next is the effective refill after one interval judged v on sig, from
// current: ×Cut when over target, +IncreaseFraction × refill_size when
// well within it, unchanged on Hold; always within [floor, refill_size].
func Next(s Settings, current int, v Verdict, sig Signal) int {
	next := current
	switch v {
	case Over:
		next = int(math.Floor(float64(current) * Cut(s, sig)))
	case Under:
		next = current + max(1, int(math.Ceil(float64(s.RefillSize)*IncreaseFraction)))
	}
	return Clamp(s, next)
}

// Cut is the factor of a decrease on sig: Decrease, or deeper as far
// over its target as the p95 (or the error rate) is, at most down to
// DeepestDecrease.
func Cut(s Settings, sig Signal) float64 {
	f := Decrease
	if s.TargetP95 > 0 && sig.P95 > s.TargetP95 {
		f = min(f, float64(s.TargetP95)/float64(sig.P95))
	}
	if s.MaxErrorRate > 0 && sig.ErrorRate > s.MaxErrorRate {
		f = min(f, s.MaxErrorRate/sig.ErrorRate)
	}
	return max(f, DeepestDecrease)
}

// Clamp bounds n to [min_refill_size, refill_size] (a floor above the
// ceiling gives way to it), and to at least 1: a queue the controller
// steers never stops admitting altogether.
func Clamp(s Settings, n int) int {
	floor := max(1, min(s.MinRefill, s.RefillSize))
	return max(floor, min(n, s.RefillSize))
}
