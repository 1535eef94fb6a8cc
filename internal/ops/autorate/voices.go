package autorate

import (
	"cmp"
	"slices"
	"time"
)

// MinVoices is how many admissions a window must have heard from before
// the proxy's view steers the rate: with one, it would be that holder's
// alone to steer.
const MinVoices = 2

// byVoice reads a window's answers as the admissions' voices, so that no
// one holder moves the rate however many requests it makes
// (measured: four concurrent POSTs of one pass holder took refill_effective
// from 20 to 2 in 34 s while the page's own p95 stayed at 3 ms).
//
//   - Each admission is one voice: its answers share a weight of 1, so
//     the p95 is the latency under which 95 % of the admissions' weight
//     lies, and the error rate is the mean of the admissions' own.
//   - The one voice with the worst p95 is set aside for the p95, and the
//     one with the worst error rate for the error rate: a page slow or
//     failing for everybody is still seen by the others, one holder
//     hitting its slowest URL or breaking its own requests is not.
//
// Answers without a voice ("") are each their own. ok is false with
// fewer than MinVoices voices.
func byVoice(s []sample) (Signal, bool) {
	type voice struct {
		took []time.Duration
		bad  int
	}
	voices := map[string]*voice{}
	var anon []*voice
	for _, x := range s {
		v := voices[x.voice]
		if x.voice == "" || v == nil {
			v = &voice{}
			if x.voice == "" {
				anon = append(anon, v)
			} else {
				voices[x.voice] = v
			}
		}
		v.took = append(v.took, x.took)
		if x.bad {
			v.bad++
		}
	}
	all := anon
	for _, v := range voices {
		all = append(all, v)
	}
	if len(all) < MinVoices {
		return Signal{Samples: len(s)}, false
	}
	worstP95, worstErr := 0, 0
	for i, v := range all {
		slices.Sort(v.took)
		if p95(v.took) > p95(all[worstP95].took) {
			worstP95 = i
		}
		if errRate(v.bad, len(v.took)) > errRate(all[worstErr].bad, len(all[worstErr].took)) {
			worstErr = i
		}
	}
	type weighed struct {
		took time.Duration
		w    float64
	}
	var ws []weighed
	errSum := 0.0
	for i, v := range all {
		if i != worstP95 {
			for _, t := range v.took {
				ws = append(ws, weighed{t, 1 / float64(len(v.took))})
			}
		}
		if i != worstErr {
			errSum += errRate(v.bad, len(v.took))
		}
	}
	slices.SortFunc(ws, func(a, b weighed) int { return cmp.Compare(a.took, b.took) })
	// The weighted nearest rank: the least latency with at least 95 % of
	// the weight at or under it (a little slack for the float sums).
	need, sum, p := 0.95*float64(len(all)-1)-1e-9, 0.0, time.Duration(0)
	for _, x := range ws {
		sum, p = sum+x.w, x.took
		if sum >= need {
			break
		}
	}
	return Signal{P95: p, ErrorRate: errSum / float64(len(all)-1), Samples: len(s)}, true
}

// p95 is the nearest-rank p95 of sorted.
func p95(sorted []time.Duration) time.Duration {
	return sorted[(len(sorted)*95+99)/100-1]
}

func errRate(bad, n int) float64 { return float64(bad) / float64(n) }
