package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// queueCollector reads each configured queue's state from Redis when
// Prometheus scrapes: one info.lua call per queue, bounded by InfoTimeout.
// Kept updated instead, these gauges would cost every request something
// and still lag behind the other replicas' work.
type queueCollector struct {
	store  Store
	queues []string
	errors *prometheus.CounterVec

	waiting, active, tokens, refill, effective, interval, paused, closed, tickAge *prometheus.Desc
}

func newQueueCollector(store Store) *queueCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "queue", name), help, []string{"queue"}, nil)
	}
	c := &queueCollector{
		store:  store,
		queues: store.Queues(),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "queue", Name: "info_errors_total",
			Help: "Scrapes that could not read a queue's state from Redis (its gauges were left out).",
		}, []string{"queue"}),
		waiting: desc("waiting", "People in the line (a scheduled opening's draw included)."),
		active:  desc("active", "Active users: admissions that have not ended."),
		tokens:  desc("tokens", "Tokens left in the bucket: direct admissions possible before the next tick."),
		refill:  desc("refill_size", "Users admitted per refill interval (refill_size)."),
		effective: desc("refill_effective",
			"Users an interval admits now: the effective refill while the order page's health drives the rate (adapt_enabled), else refill_size."),
		interval: desc("refill_interval_seconds", "Time between ticks (refill_interval)."),
		paused:   desc("paused", "1 while the operator holds admissions, else 0."),
		closed:   desc("closed", "1 while the operator has closed the sale (sold out), else 0."),
		tickAge:  desc("last_tick_age_seconds", "Time since the last applied tick, on the Redis clock; absent before the first."),
	}
	for _, q := range c.queues {
		c.errors.WithLabelValues(q) // every series from the start, at 0
	}
	return c
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.waiting, c.active, c.tokens, c.refill, c.effective, c.interval, c.paused, c.closed, c.tickAge} {
		ch <- d
	}
	c.errors.Describe(ch)
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	for _, q := range c.queues {
		// Collect has no context of its own; the timeout bounds the scrape.
		ctx, cancel := context.WithTimeout(context.Background(), InfoTimeout)
		info, err := c.store.Info(ctx, q)
		cancel()
		if err != nil {
			c.errors.WithLabelValues(q).Inc()
			continue
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, q)
		}
		gauge(c.waiting, float64(info.Waiting))
		gauge(c.active, float64(info.Entered))
		gauge(c.tokens, float64(info.Tokens))
		gauge(c.refill, float64(info.Settings.RefillSize))
		gauge(c.effective, float64(info.RefillEffective))
		gauge(c.interval, info.Settings.RefillInterval.Seconds())
		paused := 0.0
		if info.Paused {
			paused = 1
		}
		gauge(c.paused, paused)
		closed := 0.0
		if !info.ClosedAt.IsZero() {
			closed = 1
		}
		gauge(c.closed, closed)
		if !info.LastTickAt.IsZero() {
			gauge(c.tickAge, info.Now.Sub(info.LastTickAt).Seconds())
		}
	}
	c.errors.Collect(ch)
}
