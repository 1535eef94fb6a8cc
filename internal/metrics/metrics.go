// Package metrics exposes waitroom's Prometheus metrics: HTTP requests by
// route, each queue's state and what the engine did, and the Redis calls.
//
// Everything is registered on a registry of its own (never the global
// one), served by Handler on a listener of its own (WAITROOM_METRICS_ADDR),
// so metrics are never public by accident. Labels are bounded: routes are
// chi's patterns, never raw paths; queues only the configured ones; no user
// ids anywhere.
//
// The engine does not import Prometheus: Metrics implements
// queue.Observer and scheduler.Observer, and the per-queue gauges are read
// from Redis (Store.Info) at scrape time, so they cost nothing between
// scrapes and are never stale.
package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/waitroom/waitroom/internal/queue"
)

// namespace prefixes every metric of waitroom's own.
const namespace = "waitroom"

// Store is the part of the queue store the metrics read at scrape time.
type Store interface {
	Queues() []string
	Info(ctx context.Context, queue string) (queue.Info, error)
	ReplicaWaitShortfalls() uint64
}

// Metrics holds the registry and every metric of one process.
type Metrics struct {
	reg   *prometheus.Registry
	queue map[string]*queueMetrics // read-only after New: the configured queues
	http  *httpMetrics
	redis *redisMetrics
	// webhook: the site's events' deliveries (webhook.go)
	webhook *webhookMetrics
	// proxyCuts: the reverse-proxy gate's cut requests by reason (proxy.go)
	proxyCuts map[string]prometheus.Counter

	queueCollector *queueCollector
}

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
	// What the line felt like (issue 22), by queue.Sample kind.
	samples  map[queue.SampleKind]prometheus.Observer
	rejected map[[2]string]prometheus.Counter // [op, reason]
}

// InfoTimeout bounds the Redis call that reads one queue's gauges during a
// scrape, well inside Prometheus's default scrape timeout (10 s).
const InfoTimeout = 2 * time.Second

// New registers waitroom's metrics, the Go runtime's and the process's on
// a new registry. The per-queue metrics are for store.Queues().
func New(store Store) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m := &Metrics{reg: reg, queue: map[string]*queueMetrics{}}
	m.http = newHTTPMetrics(reg)
	m.redis = newRedisMetrics(reg)

	admitted := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "queue_admitted_total",
		Help: "Admissions: via=tick, moved from the line by the refill tick; via=direct, an enter admitted at once on the bucket's tokens.",
	}, []string{"queue", "via"})
	abandoned := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "abandoned_total",
		Help: "Places the tick dropped at the head of the line: not heard from for abandon_after.",
	}, []string{"queue"})
	rejected := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "queue_rejected_total",
		Help: "Enter, status and challenge calls the defences refused, by op and reason (the API's error code).",
	}, []string{"queue", "op", "reason"})
	ticks := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "queue_ticks_total",
		Help: "This replica's tick calls: result=applied (it applied the interval's tick), skipped (already applied, by any replica), failed.",
	}, []string{"queue", "result"})
	tickDuration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "queue_tick_duration_seconds",
		Help:    "Time of each applied tick call, Redis round trip included.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	}, []string{"queue"})
	tickLateness := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "queue_tick_lateness_seconds",
		Help:    "How long after it was due (the start of its interval, Redis clock) each applied tick was applied; whole intervals missed count.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"queue"})
	batch := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "queue_batch_size",
		Help:    "Calls carried by each enter or status script call (group commit).",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
	}, []string{"queue", "op"})
	waitShort := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Namespace: namespace, Name: "redis_wait_short_total",
		Help: "Enters answered although fewer replicas than WAITROOM_REDIS_WAIT_REPLICAS acknowledged them in time: places a failover then could lose.",
	}, func() float64 { return float64(store.ReplicaWaitShortfalls()) })
	gateFailOpen := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "gate_fail_open_total",
		Help: "Requests the gate let through unchecked because Redis could not be reached (WAITROOM_GATE_FAIL=open).",
	}, []string{"queue"})
	// What the line felt like (issue 22): the scripts measure each user's
	// durations at admission, done and expiry (queue.Sample). Buckets
	// from seconds to the hours a big opening's line can take.
	timeInLine := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "time_in_line_seconds",
		Help:    "Time from entry to admission of each admitted user (0 for a direct admission; from the line, to within half a refill interval).",
		Buckets: []float64{0, 1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400},
	}, []string{"queue"})
	timeInside := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "time_inside_seconds",
		Help:    "Time from admission to done (the order page's call) or to the session's expiry.",
		Buckets: []float64{10, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200},
	}, []string{"queue"})
	etaError := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "eta_error_seconds",
		Help:    "Actual admission less the one the waiting page predicted at entry, for each user admitted from the line (positive: later than said).",
		Buckets: []float64{-600, -300, -120, -60, -30, -10, -5, -1, 0, 1, 5, 10, 30, 60, 120, 300, 600},
	}, []string{"queue"})
	reg.MustRegister(admitted, abandoned, rejected, ticks, tickDuration, tickLateness, batch, waitShort, gateFailOpen,
		timeInLine, timeInside, etaError)

	for _, name := range store.Queues() {
		q := &queueMetrics{
			admittedTick:   admitted.WithLabelValues(name, "tick"),
			admittedDirect: admitted.WithLabelValues(name, "direct"),
			abandoned:      abandoned.WithLabelValues(name),
			ticksApplied:   ticks.WithLabelValues(name, "applied"),
			ticksSkipped:   ticks.WithLabelValues(name, "skipped"),
			ticksFailed:    ticks.WithLabelValues(name, "failed"),
			tickDuration:   tickDuration.WithLabelValues(name),
			tickLateness:   tickLateness.WithLabelValues(name),
			batchEnter:     batch.WithLabelValues(name, queue.OpEnter),
			batchStatus:    batch.WithLabelValues(name, queue.OpStatus),
			gateFailOpen:   gateFailOpen.WithLabelValues(name),
			rejected:       map[[2]string]prometheus.Counter{},
			samples: map[queue.SampleKind]prometheus.Observer{
				queue.TimeInLine: timeInLine.WithLabelValues(name),
				queue.ETAError:   etaError.WithLabelValues(name),
				queue.TimeInside: timeInside.WithLabelValues(name),
			},
		}
		for _, r := range [][2]string{
			{queue.OpEnter, queue.RefusedRateLimited},
			{queue.OpEnter, queue.RefusedQueueFull},
			{queue.OpEnter, queue.RefusedChallenge},
			{queue.OpStatus, queue.RefusedRateLimited},
			{queue.OpChallenge, queue.RefusedRateLimited},
		} {
			q.rejected[r] = rejected.WithLabelValues(name, r[0], r[1])
		}
		m.queue[name] = q
	}
	m.webhook = newWebhookMetrics(reg, store.Queues())
	m.proxyCuts = newProxyCuts(reg)
	m.queueCollector = newQueueCollector(store)
	reg.MustRegister(m.queueCollector)
	return m
}

// Handler serves the metrics in Prometheus's text format (or OpenMetrics,
// when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		// A collector that fails leaves its metrics out; the rest are
		// served, so one slow queue never blanks the page.
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	})
}

// DirectAdmission implements queue.Observer.
func (m *Metrics) DirectAdmission(q string) {
	if qm := m.queue[q]; qm != nil {
		qm.admittedDirect.Inc()
	}
}

// Refused implements queue.Observer.
func (m *Metrics) Refused(q, op, reason string) {
	if qm := m.queue[q]; qm != nil {
		if c := qm.rejected[[2]string{op, reason}]; c != nil {
			c.Inc()
		}
	}
}

// GateFailOpen counts a request q's gate let through unchecked
// (failopen.New's counted).
func (m *Metrics) GateFailOpen(q string) {
	if qm := m.queue[q]; qm != nil {
		qm.gateFailOpen.Inc()
	}
}

// Batch implements queue.Observer.
func (m *Metrics) Batch(q, op string, size int) {
	qm := m.queue[q]
	if qm == nil {
		return
	}
	switch op {
	case queue.OpEnter:
		qm.batchEnter.Observe(float64(size))
	case queue.OpStatus:
		qm.batchStatus.Observe(float64(size))
	}
}

// Tick implements scheduler.Observer.
func (m *Metrics) Tick(q string, res queue.TickResult, took time.Duration, err error) {
	qm := m.queue[q]
	switch {
	case qm == nil:
	case err != nil:
		qm.ticksFailed.Inc()
	case !res.Applied:
		qm.ticksSkipped.Inc()
	default:
		qm.ticksApplied.Inc()
		qm.admittedTick.Add(float64(res.Moved))
		qm.abandoned.Add(float64(res.Abandoned))
		qm.tickDuration.Observe(took.Seconds())
		qm.tickLateness.Observe(res.Late.Seconds())
		for _, s := range res.Samples {
			if h := qm.samples[s.Kind]; h != nil {
				for range s.Count {
					h.Observe(s.Value.Seconds())
				}
			}
		}
	}
}

// AdmissionEnded implements queue.Observer.
func (m *Metrics) AdmissionEnded(q string, inside time.Duration) {
	if qm := m.queue[q]; qm != nil {
		qm.samples[queue.TimeInside].Observe(inside.Seconds())
	}
}
