package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/netclass"
	"github.com/waitroom/waitroom/internal/ops/paid"
)

// Proof-of-work difficulty is in leading zero bits, but its families end
// in _difficulty: promlint reads a "bits" word as a unit of data, which
// should be bytes.
//
// bitsBuckets are the proof-of-work histograms' buckets in leading zero
// bits: every bit around the network price's base and its ceiling (13 and
// 17 by default), wider steps below and above.
var bitsBuckets = []float64{0, 2, 4, 6, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 24, 28, 32}

// paidMetrics are what visitors paid (internal/ops/paid's events), each
// configured queue's series made in New, and the price's policy in
// force: the ceiling and the networks file's prefixes per class.
type paidMetrics struct {
	queues map[string]*paidSeries // read-only after New
	// maxBits is waitroom_pow_max_difficulty, set by SetPowMaxBits.
	maxBits prometheus.Gauge
	// prefixes reads the networks file's prefixes per class at scrape
	// time (SetNetworks); nil: none listed.
	prefixes atomic.Pointer[func() map[string]int]
}

type paidSeries struct {
	paid, asked prometheus.Observer
	human       map[string]prometheus.Counter // by paid.Kind.Result
}

func newPaidMetrics(reg prometheus.Registerer, queues []string) *paidMetrics {
	paidBits := queueHistogram("pow_paid_difficulty",
		"Leading zero bits the proof of work of each place made carried (0: none; the price of a network's first place).", bitsBuckets)
	askedBits := queueHistogram("pow_asked_difficulty",
		"Leading zero bits each proof-of-work challenge issued asked.", bitsBuckets)
	human := queueCounter("human_checks_total",
		"Human checks: result=asked (a visitor was asked for one), passed, failed (the provider said no), "+
			"unavailable (the provider could not judge; the proof of work stood in).", "result")
	p := &paidMetrics{
		queues: map[string]*paidSeries{},
		maxBits: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "pow", Name: "max_difficulty",
			Help: "The price's ceiling (WAITROOM_POW_MAX_BITS): no place costs more proof of work, in leading zero bits."}),
	}
	p.maxBits.Set(queue.DefaultMaxBits)
	for _, q := range queues {
		s := &paidSeries{paid: paidBits.WithLabelValues(q), asked: askedBits.WithLabelValues(q), human: map[string]prometheus.Counter{}}
		for _, r := range paid.HumanResults() {
			s.human[r] = human.WithLabelValues(q, r)
		}
		p.queues[q] = s
	}
	reg.MustRegister(paidBits, askedBits, human, p.maxBits, &prefixCollector{p: p,
		desc: prometheus.NewDesc(prometheus.BuildFQName(namespace, "networks", "prefixes"),
			"Prefixes the networks file (WAITROOM_NETWORKS_FILE) lists per class, as last loaded; 0 without a file.", []string{"class"}, nil)})
	return p
}

// Paid implements paid.Observer: one map read and an atomic add.
func (m *Metrics) Paid(q string, e paid.Event) {
	s := m.paid.queues[q]
	if s == nil {
		return
	}
	switch e.Kind {
	case paid.PlaceMade:
		s.paid.Observe(float64(e.Bits))
	case paid.ChallengeAsked:
		s.asked.Observe(float64(e.Bits))
	default:
		if c := s.human[e.Kind.Result()]; c != nil {
			c.Inc()
		}
	}
}

// SetPowMaxBits sets waitroom_pow_max_difficulty, the price's ceiling (0:
// queue.DefaultMaxBits, as queue.Price reads it).
func (m *Metrics) SetPowMaxBits(bits int) {
	if bits == 0 {
		bits = queue.DefaultMaxBits
	}
	m.paid.maxBits.Set(float64(bits))
}

// SetNetworks gives waitroom_networks_prefixes its source, read at each
// scrape: the networks file's prefixes by class name (netclass.Class's
// String). Classes it leaves out read 0.
func (m *Metrics) SetNetworks(prefixes func() map[string]int) {
	m.paid.prefixes.Store(&prefixes)
}

// prefixCollector serves waitroom_networks_prefixes: one series per
// netclass class, always, so the label set is bounded and known.
type prefixCollector struct {
	p    *paidMetrics
	desc *prometheus.Desc
}

func (c *prefixCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *prefixCollector) Collect(ch chan<- prometheus.Metric) {
	var sizes map[string]int
	if f := c.p.prefixes.Load(); f != nil && *f != nil {
		sizes = (*f)()
	}
	for _, class := range netclass.Classes {
		name := class.String()
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(sizes[name]), name)
	}
}
