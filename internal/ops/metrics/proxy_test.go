package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// TestProxyCut: every reason's series exists from the start, a cut counts
// once under its reason, and a reason the proxy does not name adds no
// series (bounded labels).
func TestProxyCut(t *testing.T) {
	t.Parallel()
	m := New(newStore(t, redistest.Client(t), uniq("cut")))
	m.ProxyCut(proxy.CutSlowBody)
	m.ProxyCut(proxy.CutClientAbort)
	m.ProxyCut(proxy.CutClientAbort)
	m.ProxyCut("made up")
	for reason, want := range map[string]float64{proxy.CutSlowBody: 1, proxy.CutClientAbort: 2, proxy.CutPassBusy: 0, proxy.CutClientBusy: 0} {
		if got := testutil.ToFloat64(m.proxyCuts[reason]); got != want {
			t.Errorf("%s: %v, want %v", reason, got, want)
		}
	}
	if n, err := testutil.GatherAndCount(m.reg, "waitroom_proxy_cut_total"); err != nil || n != len(proxy.CutReasons) {
		t.Fatalf("%d series (%v), want %d", n, err, len(proxy.CutReasons))
	}
}
