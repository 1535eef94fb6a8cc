package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/waitroom/waitroom/internal/ops/paid"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// What visitors paid reaches the queue's histograms and counters; an
// unknown queue has no series; the policy's gauges read their sources.
func TestPaidMetrics(t *testing.T) {
	q := uniq("paid")
	m := New(newStore(t, redistest.Client(t), q))
	m.Paid(q, paid.Placed(0))
	m.Paid(q, paid.Placed(13))
	m.Paid(q, paid.Asked(13))
	m.Paid(q, paid.Human(paid.HumanAsked))
	m.Paid(q, paid.Human(paid.HumanFailed))
	m.Paid("unknown", paid.Placed(13))
	m.SetPowMaxBits(15)
	m.SetNetworks(func() map[string]int { return map[string]int{"shared": 3, "hosting": 7} })
	want := `
# HELP waitroom_queue_human_checks_total Human checks: result=asked (a visitor was asked for one), passed, failed (the provider said no), unavailable (the provider could not judge; the proof of work stood in).
# TYPE waitroom_queue_human_checks_total counter
waitroom_queue_human_checks_total{queue="QQ",result="asked"} 1
waitroom_queue_human_checks_total{queue="QQ",result="failed"} 1
waitroom_queue_human_checks_total{queue="QQ",result="passed"} 0
waitroom_queue_human_checks_total{queue="QQ",result="unavailable"} 0
# HELP waitroom_pow_max_difficulty The price's ceiling (WAITROOM_POW_MAX_BITS): no place costs more proof of work, in leading zero bits.
# TYPE waitroom_pow_max_difficulty gauge
waitroom_pow_max_difficulty 15
# HELP waitroom_networks_prefixes Prefixes the networks file (WAITROOM_NETWORKS_FILE) lists per class, as last loaded; 0 without a file.
# TYPE waitroom_networks_prefixes gauge
waitroom_networks_prefixes{class="default"} 0
waitroom_networks_prefixes{class="hosting"} 7
waitroom_networks_prefixes{class="shared"} 3
`
	err := testutil.GatherAndCompare(m.reg, strings.NewReader(strings.ReplaceAll(want, "QQ", q)),
		"waitroom_queue_human_checks_total", "waitroom_pow_max_difficulty", "waitroom_networks_prefixes")
	if err != nil {
		t.Error(err)
	}
	got, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range got {
		switch f.GetName() {
		case "waitroom_queue_pow_paid_difficulty", "waitroom_queue_pow_asked_difficulty":
			if len(f.GetMetric()) != 1 {
				t.Fatalf("%s: %d series, want the one queue's", f.GetName(), len(f.GetMetric()))
			}
			h := f.GetMetric()[0].GetHistogram()
			wantN, wantSum := uint64(2), 13.0
			if f.GetName() == "waitroom_queue_pow_asked_difficulty" {
				wantN = 1
			}
			if h.GetSampleCount() != wantN || h.GetSampleSum() != wantSum {
				t.Errorf("%s: %d samples summing %v, want %d and %v", f.GetName(), h.GetSampleCount(), h.GetSampleSum(), wantN, wantSum)
			}
		}
	}
}
