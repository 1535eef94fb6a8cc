package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/ops/autorate"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// newAdaptEnv is an env whose server has a controller (adapt.Runner).
func newAdaptEnv(t *testing.T) *env {
	t.Helper()
	rdb := redistest.Client(t)
	name := "o" + time.Now().Format("150405.000000000")[7:] + "x"
	store, err := queue.NewStore(rdb, []string{name}, slow, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	r, err := autorate.New(autorate.Options{Store: store, Redis: rdb, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWithStore(t, rdb, store, name, Options{AdminToken: adminToken, Adapt: r})
}

func TestOriginReport(t *testing.T) {
	t.Parallel()
	e := newAdaptEnv(t)
	path := "/admin/v1/queues/" + e.queue + "/origin"
	post := func(body string, auth ...string) response {
		h := []string{"Content-Type", "application/json"}
		if len(auth) == 0 {
			h = append(h, "Authorization", "Bearer "+adminToken)
		}
		return e.do("POST", path, body, h...)
	}
	if r := post(`{"p95_ms":420.5,"error_rate":0.02}`); r.status != 204 {
		t.Fatalf("report: %d %s", r.status, r.body)
	}
	v, err := e.rdb.HGetAll(context.Background(), rediskeys.Origin(e.queue)).Result()
	if err != nil || v["p95_ms"] != "420" || v["error_rate"] != "0.02" || v["source"] != "push" || v["at_ms"] == "" {
		t.Fatalf("stored report %v, %v", v, err)
	}
	for _, tc := range []struct{ body, code string }{
		{`{"p95_ms":1,`, "invalid_json"},
		{`[1]`, "invalid_json"},
		{`{"p95_ms":1,"error_rate":0,"extra":1}`, "invalid_json"},
		{`{"p95_ms":"fast","error_rate":0}`, "invalid_json"},
		{`{"error_rate":0}`, "invalid_origin_report"},
		{`{"p95_ms":10}`, "invalid_origin_report"},
		{`{"p95_ms":-1,"error_rate":0}`, "invalid_origin_report"},
		{`{"p95_ms":600001,"error_rate":0}`, "invalid_origin_report"},
		{`{"p95_ms":1e300,"error_rate":0}`, "invalid_origin_report"},
		{`{"p95_ms":10,"error_rate":1.01}`, "invalid_origin_report"},
		{`{"p95_ms":10,"error_rate":-0.1}`, "invalid_origin_report"},
	} {
		wantError(t, post(tc.body), 400, tc.code)
	}
	wantError(t, post(`{"p95_ms":1,"error_rate":0}`, "no token"), 401, "unauthorized")
	r := e.do("POST", "/admin/v1/queues/nosuch/origin", `{"p95_ms":1,"error_rate":0}`, "Content-Type", "application/json", "Authorization", "Bearer "+adminToken)
	wantError(t, r, 404, "queue_not_found")
}

func TestPatchAdaptSettings(t *testing.T) {
	t.Parallel()
	e := newAdaptEnv(t)
	r := e.patch(`{"adapt_enabled":true,"origin_target_p95_ms":800,"origin_max_error_rate":0.05,"min_refill_size":1,"origin_probe_url":"http://orders.internal:8081/healthz"}`)
	var aq adminQueueJSON
	if err := json.Unmarshal(r.body, &aq); err != nil || r.status != 200 {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	if !aq.AdaptEnabled || aq.OriginTargetP95MS != 800 || aq.OriginMaxErrorRate != 0.05 || aq.MinRefillSize != 1 ||
		aq.OriginProbeURL != "http://orders.internal:8081/healthz" || aq.RefillEffective != aq.RefillSize {
		t.Fatalf("after patch: %+v", aq)
	}
	for _, tc := range []struct{ body, field string }{
		{`{"adapt_enabled":"yes"}`, "adapt_enabled"},
		{`{"adapt_enabled":null}`, "adapt_enabled"},
		{`{"origin_target_p95_ms":-1}`, "origin_target_p95_ms"},
		{`{"origin_target_p95_ms":600001}`, "origin_target_p95_ms"},
		{`{"origin_max_error_rate":1.5}`, "origin_max_error_rate"},
		{`{"origin_max_error_rate":null}`, "origin_max_error_rate"},
		{`{"min_refill_size":-1}`, "min_refill_size"},
		{`{"origin_probe_url":7}`, "origin_probe_url"},
	} {
		wantInvalidSettings(t, e.patch(tc.body), tc.field)
	}
	for _, body := range []string{`{"origin_probe_url":"/healthz"}`, `{"origin_probe_url":"javascript:alert(1)"}`} {
		wantError(t, e.patch(body), 400, "invalid_probe_url")
	}
	// Switched off: refill_effective is refill_size at once, in the view.
	if err := e.rdb.HSet(context.Background(), rediskeys.Config(e.queue), "refill_effective", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if aq := e.adminQueue(); aq.RefillEffective != 1 {
		t.Fatalf("effective 1 stored: view says %d", aq.RefillEffective)
	}
	if r := e.patch(`{"adapt_enabled":false}`); r.status != 200 {
		t.Fatalf("switch off: %d %s", r.status, r.body)
	}
	if aq := e.adminQueue(); aq.AdaptEnabled || aq.RefillEffective != aq.RefillSize {
		t.Fatalf("switched off: %+v", aq)
	}
	// The audit log names each field changed, as for any setting.
	entries := e.auditEntries("")
	if len(entries) == 0 || entries[0].Changes[0].Field != "adapt_enabled" || string(entries[0].Changes[0].New) != "false" {
		t.Fatalf("audit: %+v", entries)
	}
}

// TestGateObservesUpstream: the reverse-proxy gate tells the controller
// each upstream answer to a request with a pass - its queue, status and
// time - and a failed one as status 0; requests without a pass, refused
// at the gate, are not the page's answers.
func TestGateObservesUpstream(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	upURL, _ := url.Parse(up.srv.URL)
	type seen struct {
		queue  string
		status int
		took   time.Duration
	}
	var mu sync.Mutex
	var got []seen
	observe := func(q, _ string, status int, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, seen{q, status, took})
	}
	rdb := redistest.Client(t)
	places, passes := newTrust(t, rdb)
	name := fmt.Sprintf("g%d", time.Now().UnixNano())
	store, err := queue.NewStore(rdb, []string{name}, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGate(t, rdb, store, name, passes, nil, true)
	e := newEnvWithStore(t, rdb, store, name, Options{Places: places, Passes: passes, Gate: g, ClientIP: behindProxy(t),
		Upstream: upstreamProxy(upURL, 500*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)), observe)})

	if r := e.do("GET", "/order", ""); r.status == 200 {
		t.Fatal("no pass, yet through the gate")
	}
	auth := passCookie(e, e.admittedPass().Pass)
	if r := e.do("GET", "/order", "", auth...); r.status != 200 {
		t.Fatalf("with a pass: %d", r.status)
	}
	if r := e.do("GET", "/slow", "", auth...); r.status != http.StatusBadGateway {
		t.Fatalf("slow upstream: %d", r.status)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].queue != name || got[0].status != 200 || got[1].status != 0 || got[1].took < 500*time.Millisecond {
		t.Fatalf("observed %+v, want the order's 200 and the slow request's 0 after 500ms", got)
	}
}
