package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/ops/paid"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// GET .../defences answers the policy in force and what was recorded,
// in one call of the view the options give; without one, the queue's
// human_check and the price's defaults, nothing paid.
func TestDefencesView(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	var rec *paid.Recorder
	price := queue.Price{Bits: 13, CalmArrivals: 100, MaxBits: 15}
	e := newEnv(t, rdb, slow, testTimeout, Options{AdminToken: adminToken})
	var err error
	if rec, err = paid.New(rdb, paid.Options{Queues: []string{e.queue}}); err != nil {
		t.Fatal(err)
	}
	with := newEnvWithStore(t, rdb, e.store, e.queue, Options{AdminToken: adminToken, Paid: rec,
		Defences: paid.Viewer{Recorder: rec, Policy: paid.Sources{Price: price, Settings: queue.NewInspector(e.store)}.Policy}.View})
	if r := e.do("PATCH", "/admin/v1/queues/"+e.queue, `{"human_check":"escalate"}`, append(bearerHeader(adminToken), "Content-Type", "application/json")...); r.status != 200 {
		t.Fatalf("PATCH human_check: %d %s", r.status, r.body)
	}
	for _, ev := range []paid.Event{paid.Placed(0), paid.Placed(13), paid.Placed(14), paid.Asked(13), paid.Asked(14), paid.Human(paid.HumanAsked), paid.Human(paid.HumanFailed)} {
		rec.Record(e.queue, ev)
	}
	get := func(e *env) paid.Defences {
		t.Helper()
		r := e.do("GET", "/admin/v1/queues/"+e.queue+"/defences", "", bearerHeader(adminToken)...)
		if r.status != 200 {
			t.Fatalf("GET defences: %d %s", r.status, r.body)
		}
		var d paid.Defences
		if err := json.Unmarshal(r.body, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := get(with)
	p := d.Policy
	if p.CeilingBits != 15 || p.NetworkBits != 13 || p.CalmArrivals != 100 || p.HumanCheck.Mode != "escalate" || p.HumanCheck.Provider != "off" || p.Networks.File {
		t.Errorf("policy %+v", p)
	}
	if d.LastMinutes != 5 || d.Paid.Places != 3 || d.Paid.Priced != 2 || d.Paid.BitsPaid != (paid.Bits{P50: 13, P99: 14, Max: 14}) ||
		d.Paid.Challenges != 2 || d.Paid.Human.Asked != 1 || d.Paid.Human.Failed != 1 {
		t.Errorf("paid %+v", d.Paid)
	}
	bare := get(e)
	if bare.Policy.CeilingBits != queue.DefaultMaxBits || bare.Policy.HumanCheck.Mode != "escalate" || bare.Paid.Places != 0 {
		t.Errorf("without a view: %+v", bare)
	}
}
