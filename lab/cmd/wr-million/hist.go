package main

import "math/bits"

// hist counts non-negative integer values (µs, ms) in log-linear buckets:
// one per value below 64, then 64 per power of two, so a quantile read
// from it is at most 1/64 (1.6 %) above the true one. Fixed size, no
// allocation per value: one per worker, merged at the end.
type hist struct {
	counts [histBuckets]uint64
	n      uint64
	max    int64
}

// 64 exact buckets, then 64 for each of the exponents 0..57 that an
// int64 above 63 can have (bits.Len64 up to 63, minus 6).
const histBuckets = 64 + 58*64

func bucketOf(v int64) int {
	if v < 64 {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - 7 // v>>e is in [64, 127]
	return 64 + e*64 + int(v>>e) - 64
}

// bucketTop is the largest value bucket i holds.
func bucketTop(i int) int64 {
	if i < 64 {
		return int64(i)
	}
	i -= 64
	e := i / 64
	return (int64(i%64+64)+1)<<e - 1
}

func (h *hist) add(v int64) {
	v = max(v, 0)
	h.counts[bucketOf(v)]++
	h.n++
	h.max = max(h.max, v)
}

func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the value at or below which a fraction q of the
// values lie, rounded up to its bucket's top (never above the max).
func (h *hist) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(bucketTop(i), h.max)
		}
	}
	return h.max
}
