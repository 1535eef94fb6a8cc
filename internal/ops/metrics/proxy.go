package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/gate/proxy"
)

// newProxyCuts is waitroom_proxy_cut_total, every reason's series made at
// once.
func newProxyCuts(reg prometheus.Registerer) map[string]prometheus.Counter {
	cuts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "proxy", Name: "cut_total",
		Help: "Requests the reverse-proxy gate cut short or refused: reason=slow_body (408, the body fell behind its grace and least rate), " +
			"client_abort (the client broke its body off or went away: not the upstream's failure), pass_busy and client_busy (429, " +
			"too many requests in flight for one admission or one address without a pass).",
	}, []string{"reason"})
	reg.MustRegister(cuts)
	m := map[string]prometheus.Counter{}
	for _, r := range proxy.CutReasons {
		m[r] = cuts.WithLabelValues(r)
	}
	return m
}

// ProxyCut counts one request the proxy cut short or refused
// (proxy.Options.OnCut).
func (m *Metrics) ProxyCut(reason string) {
	if c := m.proxyCuts[reason]; c != nil {
		c.Inc()
	}
}
