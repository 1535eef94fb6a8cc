package main

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// pow is hashes as a power of two ("2^13.0"), 0 as "0".
func pow(h float64) string {
	if h <= 0 {
		return "0"
	}
	return fmt.Sprintf("2^%.1f", math.Log2(h))
}

// secs is hashes at rate a second, as seconds.
func secs(h, rate float64) string {
	s := h / rate
	switch {
	case s == 0:
		return "0"
	case s < 0.01:
		return "<0.01 s"
	case s < 100:
		return fmt.Sprintf("%.2f s", s)
	}
	return fmt.Sprintf("%.0f s", s)
}

// quantile is the q-quantile of sorted v (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// personStats are what a group of people paid, per person.
type personStats struct {
	n, human, maxBits, without int
	again                      int // asked again: the price rose between their challenge and their enter
	p50, p99, max              float64
}

func (r *wayResult) people(match func(kind) bool) personStats {
	var st personStats
	var h []float64
	for i, a := range r.agents {
		if !a.kind.person() || !match(a.kind) {
			continue
		}
		o := r.out[i]
		st.n++
		if !o.got {
			st.without++
		}
		if o.human > 0 {
			st.human++
		}
		if o.asks > 1 {
			st.again++
		}
		st.maxBits = max(st.maxBits, o.maxBits)
		h = append(h, o.hashes)
	}
	slices.Sort(h)
	st.p50, st.p99, st.max = quantile(h, 0.5), quantile(h, 0.99), quantile(h, 1)
	return st
}

// farmStats are what one farm's places cost it.
type farmStats struct {
	wanted, got, networks, human int
	// The places got at the ceiling, by a human check, and for nothing.
	atCeiling, checked, free int
	hashes                   float64
}

func (r *wayResult) farm(k kind, ceiling int) farmStats {
	st := farmStats{networks: r.networks[k]}
	for i, a := range r.agents {
		if a.kind != k {
			continue
		}
		o := r.out[i]
		st.wanted++
		st.hashes += o.hashes
		st.human += o.human
		if !o.got {
			continue
		}
		st.got++
		switch {
		case o.paidBits < 0:
			st.checked++
		case o.paidBits >= ceiling:
			st.atCeiling++
		case o.paidBits == 0 && o.human == 0:
			st.free++
		}
	}
	return st
}

// pressure is the highest and the median of the pressure bits the
// anonymous callers' challenges show (their bits less the price at no
// pressure, where neither is at the ceiling nor free).
func (r *wayResult) pressure(bits, ceiling int) (hi, median int, n int) {
	var p []int
	for _, a := range r.asks {
		base := queue.PriceDifficulty(bits, a.held, 0)
		if a.held == 0 || a.bits == 0 || a.bits >= ceiling || base >= ceiling {
			continue
		}
		p = append(p, a.bits-base)
	}
	if len(p) == 0 {
		return 0, 0, 0
	}
	slices.Sort(p)
	return p[len(p)-1], p[len(p)/2], len(p)
}

// writeWay writes one way's Markdown tables.
func writeWay(w io.Writer, r *wayResult, cfg modelConfig, rate, botRate float64) {
	ceiling := queue.DefaultMaxBits
	fmt.Fprintf(w, "### %s\n\n", r.way.name)
	hi, med, n := r.pressure(cfg.bits, ceiling)
	fmt.Fprintf(w, "%d places in %.1f s (%.0f a second; calm arrivals %g a second): ", len(r.agents), r.elapsed.Seconds(), r.arrivals, r.calm)
	if n == 0 {
		fmt.Fprint(w, "no challenge below the ceiling shows the pressure.\n\n")
	} else {
		fmt.Fprintf(w, "pressure %d bits at most, %d at the median of the %d challenges below the ceiling that show it.\n\n", hi, med, n)
	}

	fmt.Fprintf(w, "People (hashes a person was asked for, all their asks; seconds at the page's rate of %.0f hashes/s):\n\n", rate)
	fmt.Fprintln(w, "| people | n | p50 | p99 | max | max bits asked | p99 time | max time | asked again | human checks | no place |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	rows := []struct {
		name  string
		match func(kind) bool
	}{
		{kindNames[carrierPerson], func(k kind) bool { return k == carrierPerson }},
		{kindNames[member], func(k kind) bool { return k == member }},
		{kindNames[loner], func(k kind) bool { return k == loner }},
		{"**all people**", func(kind) bool { return true }},
	}
	for _, row := range rows {
		st := r.people(row.match)
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %d | %s | %s | %d | %d | %d |\n", row.name, st.n, pow(st.p50), pow(st.p99), pow(st.max),
			st.maxBits, secs(st.p99, rate), secs(st.max, rate), st.again, st.human, st.without)
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "Farms (each wants its places; hashes it solved, and human checks it must buy; a bot's rate: %.0f hashes/s, one core of a native solver):\n", botRate)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| farm | networks | places wanted | places got | hashes total | per place | time at the page's rate | time at a bot's rate | places at the ceiling | places by a human check | free places | human checks |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, k := range []kind{hostingFarm, residentialFarm, carrierFarm} {
		st := r.farm(k, ceiling)
		per := 0.0
		if st.got > 0 {
			per = st.hashes / float64(st.got)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %s | %s | %s | %s | %d | %d | %d | %d |\n", kindNames[k], st.networks, st.wanted, st.got,
			pow(st.hashes), pow(per), secs(st.hashes, rate), secs(st.hashes, botRate), st.atCeiling, st.checked, st.free, st.human)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "FIFO among people: %d people in the line, %d breaks of their arrival order, %d not waiting.\n\n", r.fifoPeople, r.fifoBreaks, r.notWaiting)
}

// curveBuckets are the places held the curve is shown at: 0, 1, 2, 3,
// then by powers of two (4–7, 8–15, …).
func curveBucket(held int) (lo, hi int) {
	if held < 4 {
		return held, held
	}
	lo = 1 << (bits.Len(uint(held)) - 1)
	return lo, 2*lo - 1
}

// writeCurve writes "places held by a network → bits asked" as the
// anonymous callers of r met it (lowest, median and highest bits asked
// at each count of places held, as the model counted them), with the
// formula's at no pressure and at the most, as CSV and as bars of the
// median.
func writeCurve(w io.Writer, r *wayResult, priceBits int) {
	ceiling := queue.DefaultMaxBits
	asked := map[int][]int{}
	for _, a := range r.asks {
		lo, _ := curveBucket(a.held)
		asked[lo] = append(asked[lo], a.bits)
	}
	var los []int
	for lo := range asked {
		los = append(los, lo)
	}
	slices.Sort(los)
	fmt.Fprintf(w, "Places held by a network → bits asked (%s; bits %d, ceiling %d; the formula's bits at the range's low end):\n\n", r.way.name, priceBits, ceiling)
	fmt.Fprintln(w, "```")
	fmt.Fprintln(w, "held,challenges,asked_min,asked_median,asked_max,formula_calm,formula_max_pressure")
	var bars strings.Builder
	for _, lo := range los {
		v := asked[lo]
		slices.Sort(v)
		_, hi := curveBucket(lo)
		held := strconv.Itoa(lo)
		if hi > lo {
			held = fmt.Sprintf("%d-%d", lo, hi)
		}
		med := v[len(v)/2]
		fmt.Fprintf(w, "%s,%d,%d,%d,%d,%d,%d\n", held, len(v), v[0], med, v[len(v)-1],
			min(queue.PriceDifficulty(priceBits, lo, 0), ceiling), min(queue.PriceDifficulty(priceBits, lo, queue.MaxPressure), ceiling))
		fmt.Fprintf(&bars, "%9s %-*s %d\n", held, ceiling, strings.Repeat("#", med), med)
	}
	fmt.Fprintln(w, "```")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "```")
	fmt.Fprintln(w, "     held bits asked (median)")
	fmt.Fprint(w, bars.String())
	fmt.Fprintln(w, "```")
	fmt.Fprintln(w)
}

// targets are the model's targets a way missed (none: all held).
func targets(r *wayResult, idx int) []string {
	ceiling := queue.DefaultMaxBits
	var miss []string
	fail := func(f string, a ...any) { miss = append(miss, fmt.Sprintf("%s: ", r.way.name)+fmt.Sprintf(f, a...)) }
	all := r.people(func(kind) bool { return true })
	if all.without > 0 {
		fail("%d people got no place", all.without)
	}
	if r.fifoBreaks > 0 || r.notWaiting > 0 {
		fail("FIFO among people: %d breaks, %d not waiting", r.fifoBreaks, r.notWaiting)
	}
	if all.maxBits > ceiling {
		fail("a person was asked %d bits, over the ceiling %d", all.maxBits, ceiling)
	}
	if idx == 0 {
		return miss
	}
	if all.p99 > 1<<13 {
		fail("people's p99 %s hashes, want ≤ 2^13", pow(all.p99))
	}
	if m := r.people(func(k kind) bool { return k == member }); m.max > 0 || m.human > 0 {
		fail("signed-in members paid: max %s hashes, %d human checks", pow(m.max), m.human)
	}
	if h := r.farm(hostingFarm, ceiling); h.atCeiling+h.checked < h.got {
		fail("the hosting farm: %d places, %d at the ceiling, %d human checks", h.got, h.atCeiling, h.human)
	}
	if idx == 2 {
		res := r.farm(residentialFarm, ceiling)
		if beyond := res.got - res.networks; res.checked < beyond || res.free > res.networks {
			fail("the residential farm: %d places on %d networks, %d human checks, %d free; want a check for each of the %d beyond the first of each network",
				res.got, res.networks, res.human, res.free, beyond)
		}
	}
	return miss
}
