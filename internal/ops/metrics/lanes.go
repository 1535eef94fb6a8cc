package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// laneVecs are the lanes' families (waitroom_queue_lane_*), labelled
// by queue and lane ("general" for the general lane). A queue without
// lanes has none of their series; one with lanes has a series per lane
// from its first applied tick. A queue's lanes are at most
// queue.MaxLanes configured and those removed but not yet empty, so the
// labels stay bounded.
type laneVecs struct {
	waiting    *prometheus.GaugeVec
	admitted   *prometheus.CounterVec
	timeInLine *prometheus.HistogramVec
}

// generalLane is the general lane's label.
const generalLane = "general"

func newLaneVecs(reg prometheus.Registerer) *laneVecs {
	labels := []string{"queue", "lane"}
	v := &laneVecs{
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "queue", Name: "lane_waiting",
			Help: "People left in each lane's line by the last applied tick this replica saw."}, labels),
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "queue", Name: "lane_admitted_total",
			Help: "Admissions each lane's line got from the refill tick (direct admissions are the queue's only)."}, labels),
		timeInLine: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "queue", Name: "lane_time_in_line_seconds",
			Help:    "Time from entry to admission of each user admitted from a lane's line, as waitroom_queue_time_in_line_seconds.",
			Buckets: []float64{0, 1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400}}, labels),
	}
	reg.MustRegister(v.waiting, v.admitted, v.timeInLine)
	return v
}

// tick records an applied tick's lanes: each lane's and the general
// lane's (the rest of the queue's) moves and line.
func (v *laneVecs) tick(q string, res queue.TickResult) {
	if len(res.Lanes) == 0 {
		return
	}
	moved, waiting := res.Moved, res.Waiting
	for _, l := range res.Lanes {
		v.admitted.WithLabelValues(q, l.Lane).Add(float64(l.Moved))
		v.waiting.WithLabelValues(q, l.Lane).Set(float64(l.Waiting))
		moved, waiting = moved-l.Moved, waiting-l.Waiting
	}
	v.admitted.WithLabelValues(q, generalLane).Add(float64(moved))
	v.waiting.WithLabelValues(q, generalLane).Set(float64(waiting))
	for _, s := range res.Samples {
		if s.Kind != queue.TimeInLine || s.Value == 0 { // direct admissions waited no line
			continue
		}
		lane := s.Lane
		if lane == "" {
			lane = generalLane
		}
		h := v.timeInLine.WithLabelValues(q, lane)
		for range s.Count {
			h.Observe(s.Value.Seconds())
		}
	}
}
