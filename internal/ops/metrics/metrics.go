// Package metrics exposes waitroom's Prometheus metrics: HTTP requests by
// route, each queue's state and what the engine did, and the Redis calls.
//
// Everything is registered on a registry of its own (never the global
// one), served by Handler on a listener of its own (WAITROOM_METRICS_ADDR),
// so metrics are never public by accident. Labels are bounded: routes are
// chi's patterns, never raw paths; queues only the configured ones; no user
// ids anywhere.
//
// Names follow one scheme (prometheus.io's naming practices), which
// names_test.go checks on every family: waitroom_<subsystem>_<name>[_<unit>],
// the subsystem one of queue (a queue's state and what the engine did to
// its line), http, redis, webhook, gate, proxy, pow (the price of a place)
// and networks (the operator's network classes); counters end in _total,
// times are _seconds, a proof of work's leading zero bits a _difficulty.
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

	"github.com/waitroom/waitroom/internal/engine/queue"
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
	// commands: the order page's commands (commands.go)
	commands map[commandKey]prometheus.Counter

	queueCollector *queueCollector
	// lanes: the lanes' lines (lanes.go)
	lanes *laneVecs
	// paid: what visitors paid and the price's policy (paid.go)
	paid *paidMetrics
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

	reg.MustRegister(newWaitShort(store))
	vecs := newQueueVecs(reg)
	m.lanes = newLaneVecs(reg)
	for _, name := range store.Queues() {
		m.queue[name] = vecs.forQueue(name)
	}
	m.webhook = newWebhookMetrics(reg, store.Queues())
	m.proxyCuts = newProxyCuts(reg)
	m.commands = newCommands(reg, store.Queues())
	m.paid = newPaidMetrics(reg, store.Queues())
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
		m.lanes.tick(q, res)
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
