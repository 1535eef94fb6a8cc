package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// queueMetrics are one queue's counters, each child made once in New so
// that reporting is a map read and an atomic add, and so that every series
// exists (at 0) from the start: rate() and the alerts work from the first
// scrape.
type queueMetrics struct {
	admittedTick, admittedDirect prometheus.Counter
	abandoned                    prometheus.Counter
	ticksApplied, ticksSkipped   prometheus.Counter
	ticksFailed                  prometheus.Counter
	tickDuration, tickLateness   prometheus.Observer
	batchEnter, batchStatus      prometheus.Observer
	gateFailOpen                 prometheus.Counter
	// What the line felt like, by queue.Sample kind.
	samples  map[queue.SampleKind]prometheus.Observer
	rejected map[[2]string]prometheus.Counter // [op, reason]
}

// queueVecs are the families of what the engine did to each queue's line
// (waitroom_queue_*), and the gate's fail-open count, which the gate
// reports per queue too.
type queueVecs struct {
	admitted, abandoned, rejected, ticks, gateFailOpen *prometheus.CounterVec
	tickDuration, tickLateness, batch                  *prometheus.HistogramVec
	timeInLine, timeInside, etaError                   *prometheus.HistogramVec
}

// queueCounter and queueHistogram make a family of the queue subsystem,
// labelled by queue and then by labels.
func queueCounter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "queue", Name: name, Help: help,
	}, append([]string{"queue"}, labels...))
}

func queueHistogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "queue", Name: name, Help: help, Buckets: buckets,
	}, append([]string{"queue"}, labels...))
}

func newQueueVecs(reg prometheus.Registerer) *queueVecs {
	v := &queueVecs{
		admitted: queueCounter("admitted_total",
			"Admissions: via=tick, moved from the line by the refill tick; via=direct, an enter admitted at once on the bucket's tokens.", "via"),
		abandoned: queueCounter("abandoned_total",
			"Places the tick dropped at the head of the line: not heard from for abandon_after."),
		rejected: queueCounter("rejected_total",
			"Enter, status and challenge calls the defences refused, by op and reason (the API's error code).", "op", "reason"),
		ticks: queueCounter("ticks_total",
			"This replica's tick calls: result=applied (it applied the interval's tick), skipped (already applied, by any replica), failed.", "result"),
		tickDuration: queueHistogram("tick_duration_seconds",
			"Time of each applied tick call, Redis round trip included.",
			[]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}),
		tickLateness: queueHistogram("tick_lateness_seconds",
			"How long after it was due (the start of its interval, Redis clock) each applied tick was applied; whole intervals missed count.",
			[]float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}),
		batch: queueHistogram("batch_size",
			"Calls carried by each enter or status script call (group commit).",
			[]float64{1, 2, 4, 8, 16, 32, 64, 128, 256}, "op"),
		gateFailOpen: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "gate", Name: "fail_open_total",
			Help: "Requests the gate let through unchecked because Redis could not be reached (WAITROOM_GATE_FAIL=open).",
		}, []string{"queue"}),
	}
	v.addLineHistograms()
	reg.MustRegister(v.admitted, v.abandoned, v.rejected, v.ticks, v.tickDuration, v.tickLateness, v.batch,
		v.gateFailOpen, v.timeInLine, v.timeInside, v.etaError)
	return v
}

// addLineHistograms makes what the line felt like: the scripts
// measure each user's durations at admission, done and expiry
// (queue.Sample). Buckets from seconds to the hours a big opening's line
// can take.
func (v *queueVecs) addLineHistograms() {
	v.timeInLine = queueHistogram("time_in_line_seconds",
		"Time from entry to admission of each admitted user (0 for a direct admission; from the line, to within half a refill interval).",
		[]float64{0, 1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400})
	v.timeInside = queueHistogram("time_inside_seconds",
		"Time from admission to done (the order page's call) or to the session's expiry.",
		[]float64{10, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200})
	v.etaError = queueHistogram("eta_error_seconds",
		"Actual admission less the one the waiting page predicted at entry, for each user admitted from the line (positive: later than said).",
		[]float64{-600, -300, -120, -60, -30, -10, -5, -1, 0, 1, 5, 10, 30, 60, 120, 300, 600})
}

// refusals are the (op, reason) pairs the engine reports, each made at
// start.
var refusals = [][2]string{
	{queue.OpEnter, queue.RefusedRateLimited},
	{queue.OpEnter, queue.RefusedQueueFull},
	{queue.OpEnter, queue.RefusedChallenge},
	{queue.OpStatus, queue.RefusedRateLimited},
	{queue.OpChallenge, queue.RefusedRateLimited},
}

// forQueue makes every series of queue name.
func (v *queueVecs) forQueue(name string) *queueMetrics {
	q := &queueMetrics{
		admittedTick:   v.admitted.WithLabelValues(name, "tick"),
		admittedDirect: v.admitted.WithLabelValues(name, "direct"),
		abandoned:      v.abandoned.WithLabelValues(name),
		ticksApplied:   v.ticks.WithLabelValues(name, "applied"),
		ticksSkipped:   v.ticks.WithLabelValues(name, "skipped"),
		ticksFailed:    v.ticks.WithLabelValues(name, "failed"),
		tickDuration:   v.tickDuration.WithLabelValues(name),
		tickLateness:   v.tickLateness.WithLabelValues(name),
		batchEnter:     v.batch.WithLabelValues(name, queue.OpEnter),
		batchStatus:    v.batch.WithLabelValues(name, queue.OpStatus),
		gateFailOpen:   v.gateFailOpen.WithLabelValues(name),
		rejected:       map[[2]string]prometheus.Counter{},
		samples: map[queue.SampleKind]prometheus.Observer{
			queue.TimeInLine: v.timeInLine.WithLabelValues(name),
			queue.ETAError:   v.etaError.WithLabelValues(name),
			queue.TimeInside: v.timeInside.WithLabelValues(name),
		},
	}
	for _, r := range refusals {
		q.rejected[r] = v.rejected.WithLabelValues(name, r[0], r[1])
	}
	return q
}
