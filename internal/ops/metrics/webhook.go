package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/ops/webhook"
)

// webhookMetrics are the deliveries of the site's events (internal/ops/webhook),
// every series made at once for the configured queues.
type webhookMetrics struct {
	deliveries map[[2]string]prometheus.Counter // [queue, result]
	dropped    map[[2]string]prometheus.Counter // [queue, reason]
	backlog    *prometheus.GaugeVec
	lag        *prometheus.GaugeVec
}

func newWebhookMetrics(reg prometheus.Registerer, queues []string) *webhookMetrics {
	deliveries := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "webhook", Name: "deliveries_total",
		Help: "Webhook delivery attempts by this replica: result=delivered (a 2xx), retry (failed, tried again after a backoff), dead_letter (failed for an hour, kept aside).",
	}, []string{"queue", "result"})
	backlog := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "webhook", Name: "backlog",
		Help: "Outbox entries (deliveries of up to 100 events) not yet acknowledged, as this replica last read them.",
	}, []string{"queue"})
	lag := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "webhook", Name: "lag_seconds",
		Help: "Age of the oldest outbox entry not yet acknowledged (0: none), as this replica last read it.",
	}, []string{"queue"})
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "webhook", Name: "events_dropped_total",
		Help: "Webhook events the queue's scripts did not write, their outbox full, as this replica took the count: reason=outbox_full (100,000 entries undelivered), bulk_full (the bulk outbox of users' own leaving at its cap).",
	}, []string{"queue", "reason"})
	reg.MustRegister(deliveries, backlog, lag, dropped)
	w := &webhookMetrics{deliveries: map[[2]string]prometheus.Counter{}, dropped: map[[2]string]prometheus.Counter{}, backlog: backlog, lag: lag}
	for _, q := range queues {
		for _, r := range []string{webhook.ResultDelivered, webhook.ResultRetry, webhook.ResultDeadLetter} {
			w.deliveries[[2]string{q, r}] = deliveries.WithLabelValues(q, r)
		}
		for _, r := range webhook.DropReasons {
			w.dropped[[2]string{q, r}] = dropped.WithLabelValues(q, r)
		}
	}
	return w
}

// WebhookDelivered implements webhook.Observer.
func (m *Metrics) WebhookDelivered(q, result string) {
	if c := m.webhook.deliveries[[2]string{q, result}]; c != nil {
		c.Inc()
	}
}

// WebhookBacklog implements webhook.Observer.
func (m *Metrics) WebhookBacklog(q string, entries int64, oldest time.Duration) {
	if _, ok := m.queue[q]; !ok {
		return
	}
	m.webhook.backlog.WithLabelValues(q).Set(float64(entries))
	m.webhook.lag.WithLabelValues(q).Set(oldest.Seconds())
}

// WebhookDropped implements webhook.Observer.
func (m *Metrics) WebhookDropped(q, reason string, n int64) {
	if c := m.webhook.dropped[[2]string{q, reason}]; c != nil && n > 0 {
		c.Add(float64(n))
	}
}
