package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

func (e *env) adminQueue() adminQueueJSON {
	e.t.Helper()
	r := e.do("GET", "/admin/v1/queues/"+e.queue, "", "Authorization", "Bearer "+adminToken)
	var aq adminQueueJSON
	if err := json.Unmarshal(r.body, &aq); err != nil || r.status != 200 {
		e.t.Fatalf("admin queue: %d %s", r.status, r.body)
	}
	return aq
}

func (e *env) patch(body string) response {
	e.t.Helper()
	return e.do("PATCH", "/admin/v1/queues/"+e.queue, body, "Authorization", "Bearer "+adminToken)
}

// wantInvalidSettings checks a 400 invalid_settings that names field.
func wantInvalidSettings(t *testing.T, r response, field string) {
	t.Helper()
	wantError(t, r, 400, "invalid_settings")
	var body httpkit.ErrorBody
	_ = json.Unmarshal(r.body, &body)
	if body.Error.Field != field {
		t.Errorf("error names field %q, want %q (%s)", body.Error.Field, field, r.body)
	}
}

func TestPatchSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken})
	r := e.patch(`{"refill_size":7,"max_active":300,"paused":true,"abandon_after_ms":60000,"max_waiting":5000,"challenge_difficulty":16}`)
	var aq adminQueueJSON
	if err := json.Unmarshal(r.body, &aq); err != nil || r.status != 200 {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	if aq.RefillSize != 7 || aq.MaxActive != 300 || !aq.Paused || aq.RefillIntervalMS != 3600000 || aq.AbandonAfterMS != 60000 ||
		aq.MaxWaiting != 5000 || aq.ChallengeDifficulty != 16 {
		t.Fatalf("after patch: %+v", aq)
	}
	if info := e.info(); info.MaxActive != 300 || !info.Paused || info.RefillSize != 7 {
		t.Fatalf("public info: %+v", info)
	}
	if r := e.patch(`{"paused":false}`); r.status != 200 {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	if aq := e.adminQueue(); aq.Paused || aq.MaxActive != 300 || aq.RefillSize != 7 {
		t.Fatalf("a patch of one field changed others: %+v", aq)
	}

	// Bad input: named, and nothing applied, even beside a valid field.
	for _, tc := range []struct{ body, field string }{
		{`{"refill_size":0}`, "refill_size"},
		{`{"refill_size":100001}`, "refill_size"},
		{`{"refill_size":"5"}`, "refill_size"},
		{`{"refill_size":2.5}`, "refill_size"},
		{`{"refill_size":null}`, "refill_size"},
		{`{"max_active":-1}`, "max_active"},
		{`{"max_active":10000001}`, "max_active"},
		{`{"max_active":"many"}`, "max_active"},
		{`{"max_active":null}`, "max_active"},
		{`{"abandon_after_ms":-1}`, "abandon_after_ms"},
		{`{"abandon_after_ms":86400001}`, "abandon_after_ms"},
		{`{"abandon_after_ms":"2m"}`, "abandon_after_ms"},
		{`{"abandon_after_ms":null}`, "abandon_after_ms"},
		{`{"max_waiting":-1}`, "max_waiting"},
		{`{"max_waiting":100000001}`, "max_waiting"},
		{`{"max_waiting":"lots"}`, "max_waiting"},
		{`{"max_waiting":null}`, "max_waiting"},
		{`{"challenge_difficulty":-1}`, "challenge_difficulty"},
		{`{"challenge_difficulty":33}`, "challenge_difficulty"},
		{`{"challenge_difficulty":8.5}`, "challenge_difficulty"},
		{`{"challenge_difficulty":null}`, "challenge_difficulty"},
		{`{"paused":"yes"}`, "paused"},
		{`{"paused":1}`, "paused"},
		{`{"paused":null}`, "paused"},
		{`{"refill_interval_ms":1000}`, "refill_interval_ms"},
		{`{"max_active":5,"refill_size":-2}`, "refill_size"},
		{`{"paused":true,"max_active":-5}`, "max_active"},
		{`{}`, ""},
	} {
		wantInvalidSettings(t, e.patch(tc.body), tc.field)
	}
	for _, body := range []string{``, `[]`, `{"paused":true`, `"x"`} {
		wantError(t, e.patch(body), 400, "invalid_json")
	}
	wantError(t, e.do("PATCH", "/admin/v1/queues/"+e.queue, `{"paused":true}`), 401, "unauthorized")
	wantError(t, e.do("PATCH", "/admin/v1/queues/nope", `{"paused":true}`, "Authorization", "Bearer "+adminToken), 404, "queue_not_found")
	if aq := e.adminQueue(); aq.Paused || aq.MaxActive != 300 || aq.RefillSize != 7 || aq.AbandonAfterMS != 60000 ||
		aq.MaxWaiting != 5000 || aq.ChallengeDifficulty != 16 {
		t.Fatalf("bad patches changed the config: %+v", aq)
	}
	// PUT refill-size stays.
	if r := e.do("PUT", "/admin/v1/queues/"+e.queue+"/refill-size", `{"refill_size":9}`, "Authorization", "Bearer "+adminToken); r.status != 200 {
		t.Fatalf("PUT refill-size: %d", r.status)
	}
}

// The cap, pause and done seen through the API: a paused queue says so in
// tickets; done ends the admission its pass names, and the slot is reused.
func TestCapPauseAndDone(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	e := newEnv(t, rdb, queue.Settings{RefillSize: 5, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout, Options{AdminToken: adminToken})
	other := newEnv(t, rdb, slow, testTimeout, Options{Places: e.srvPlaces(t), Passes: e.passes})
	if r := e.patch(`{"max_active":1}`); r.status != 200 {
		t.Fatal(r.status)
	}
	in, _ := e.enterAnon()
	waiting, _ := e.enterAnon()
	if in.Status != queue.Entered || waiting.Status != queue.Waiting {
		t.Fatalf("cap 1 with 5 tokens: %s then %s", in.Status, waiting.Status)
	}
	if info := e.info(); info.Active != 1 || info.MaxActive != 1 {
		t.Fatalf("info %+v", info)
	}

	done := "/api/v1/queues/" + e.queue + "/done"
	otherPass := other.admittedPass()
	wantError(t, e.do("POST", done, ""), 401, "invalid_pass")
	wantError(t, e.do("POST", done, "", bearerHeader(otherPass.Pass)...), 401, "invalid_pass")
	wantError(t, e.do("POST", done, "", bearerHeader(flipChar(in.Pass, len(in.Pass)-30))...), 401, "invalid_pass")
	wantError(t, e.do("POST", done, "", bearerHeader(in.PlaceToken)...), 401, "invalid_pass")
	wantError(t, e.do("POST", "/api/v1/queues/nope/done", "", bearerHeader(in.Pass)...), 404, "queue_not_found")
	if st := decodeTicket(t, e.statusOf(bearerHeader(in.PlaceToken)...)); st.Status != queue.Entered {
		t.Fatalf("refused done calls ended the admission: %+v", st)
	}
	for range 2 { // idempotent
		if r := e.do("POST", done, "", bearerHeader(in.Pass)...); r.status != http.StatusNoContent {
			t.Fatalf("done: %d %s", r.status, r.body)
		}
	}
	wantError(t, e.verify(in.Pass), 401, "invalid_pass")
	if st := decodeTicket(t, e.statusOf(bearerHeader(in.PlaceToken)...)); st.Status != queue.NotWaiting || st.Reason != queue.ReasonDone {
		t.Fatalf("after done: %+v", st)
	}
	if err := e.rdb.HDel(context.Background(), "wr:{"+e.queue+"}:tick", "next_at_ms", "min_next_ms").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Tick(context.Background(), e.queue); err != nil {
		t.Fatal(err)
	}
	if st := decodeTicket(t, e.statusOf(bearerHeader(waiting.PlaceToken)...)); st.Status != queue.Entered {
		t.Fatalf("the slot done freed went to nobody: %+v", st)
	}

	if r := e.patch(`{"paused":true}`); r.status != 200 {
		t.Fatal(r.status)
	}
	p, _ := e.enterAnon()
	if p.Status != queue.Waiting || !p.Paused {
		t.Fatalf("enter while paused: %+v", p)
	}
}

// A scheduled opening through the API: before the pre-queue window enter
// answers 403 not_open with both times; in it, tickets wait for the draw
// with opens_at; the operator sees the draw's seed once it is made.
func TestScheduledOpeningAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout, Options{AdminToken: adminToken})
	now := time.Now().UTC().Truncate(time.Second)
	opens, pre := now.Add(2*time.Hour), now.Add(time.Hour)
	r := e.patch(`{"opens_at":"` + opens.Format(time.RFC3339) + `","prequeue_from":"` + pre.Format(time.RFC3339) + `"}`)
	var aq adminQueueJSON
	if err := json.Unmarshal(r.body, &aq); err != nil || r.status != 200 || aq.OpensAt != opens.Format(time.RFC3339Nano) || aq.PrequeueFrom != pre.Format(time.RFC3339Nano) {
		t.Fatalf("schedule: %d %s", r.status, r.body)
	}
	if info := e.info(); info.OpensAt != aq.OpensAt {
		t.Fatalf("public view: %+v", info)
	}
	r = e.do("POST", "/api/v1/queues/"+e.queue+"/enter", "{}")
	wantError(t, r, 403, "not_open")
	var body httpkit.ErrorBody
	_ = json.Unmarshal(r.body, &body)
	if body.Error.OpensAt != aq.OpensAt || body.Error.PrequeueFrom != aq.PrequeueFrom {
		t.Fatalf("not_open names %q and %q", body.Error.OpensAt, body.Error.PrequeueFrom)
	}

	if r := e.patch(`{"prequeue_from":null}`); r.status != 200 {
		t.Fatal(r.status)
	}
	tk, _ := e.enterAnon()
	if tk.Status != queue.Waiting || tk.Position != 0 || tk.OpensAt != aq.OpensAt || tk.ETASeconds == nil || *tk.ETASeconds < 3500 {
		t.Fatalf("in the draw: %+v", tk)
	}
	// The opening passes (the operator moves it to now) and a tick draws.
	if r := e.patch(`{"opens_at":"` + now.Add(-time.Second).Format(time.RFC3339) + `"}`); r.status != 200 {
		t.Fatal(r.status)
	}
	if err := e.rdb.HDel(context.Background(), "wr:{"+e.queue+"}:tick", "next_at_ms", "min_next_ms").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Tick(context.Background(), e.queue); err != nil {
		t.Fatal(err)
	}
	if st := decodeTicket(t, e.statusOf(bearerHeader(tk.PlaceToken)...)); st.Status != queue.Entered {
		t.Fatalf("after the draw: %+v", st)
	}
	if aq := e.adminQueue(); len(aq.DrawSeed) != 64 || len(aq.DrawCommitment) != 64 || aq.DrawCount != 1 || aq.DrawFor == "" {
		t.Fatalf("the draw record: %+v", aq)
	}

	for _, tc := range []struct{ body, field string }{
		{`{"opens_at":"tomorrow"}`, "opens_at"},
		{`{"opens_at":12}`, "opens_at"},
		{`{"prequeue_from":"2026-13-01T00:00:00Z"}`, "prequeue_from"},
		{`{"opens_at":"2030-01-01T10:00:00Z","prequeue_from":"2030-01-01T11:00:00Z"}`, "prequeue_from"},
		{`{"opens_at":null,"prequeue_from":"2030-01-01T11:00:00Z"}`, "prequeue_from"},
	} {
		wantInvalidSettings(t, e.patch(tc.body), tc.field)
	}
}

// TestWebhookURLNeedsASecret: without WAITROOM_WEBHOOK_SECRET nothing is
// delivered, so a webhook_url is refused (webhooks_disabled) instead of
// stored to wait in silence; clearing one is still taken.
func TestWebhookURLNeedsASecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, NoWebhookSecret: true})
	r := e.patch(`{"webhook_url":"http://127.0.0.1:8000/hook"}`)
	wantError(t, r, 400, "webhooks_disabled")
	if got := e.rdb.HGet(context.Background(), rediskeys.Config(e.queue), "webhook_url").Val(); got != "" {
		t.Fatalf("stored %q", got)
	}
	for _, body := range []string{`{"webhook_url":null}`, `{"webhook_url":""}`} {
		if r := e.patch(body); r.status != 200 {
			t.Fatalf("%s: %d %s", body, r.status, r.body)
		}
	}
	// A URL that is wrong anyway is named as such first.
	wantInvalidSettings(t, e.patch(`{"webhook_url":"ftp://hooks.example/w"}`), "webhook_url")
}

// TestAuditKeepsTheWebhookHostTyped: the audit log names the host the
// operator typed (the URL's own, port included), not an address it
// resolves to.
func TestAuditKeepsTheWebhookHostTyped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken})
	for _, url := range []string{"http://127.0.0.1:8000/hook?token=s3cret", "http://localhost:8000/hook", "https://hooks.example/w"} {
		if r := e.patch(`{"webhook_url":"` + url + `"}`); r.status != 200 {
			t.Fatalf("%s: %d %s", url, r.status, r.body)
		}
	}
	var got []string
	for _, entry := range e.auditEntries("") {
		for _, c := range entry.Changes {
			if c.Field == "webhook_url" {
				got = append(got, string(c.New))
			}
		}
	}
	want := []string{`"hooks.example"`, `"localhost:8000"`, `"127.0.0.1:8000"`} // newest first
	if !slices.Equal(got, want) {
		t.Fatalf("audited %v, want %v", got, want)
	}
}

// A queue's webhook_url: an https URL (or http to a loopback host) is
// stored, null or "" returns to the default; anything else is refused,
// named; the audit log keeps the host only (a query may hold a token).
func TestPatchWebhookURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken})
	cfg := rediskeys.Config(e.queue)
	for _, tc := range []struct{ body, want string }{
		{`{"webhook_url":"https://hooks.example/w?token=s3cret"}`, "https://hooks.example/w?token=s3cret"},
		{`{"webhook_url":"http://127.0.0.1:9/w"}`, "http://127.0.0.1:9/w"},
		{`{"webhook_url":null}`, ""},
		{`{"webhook_url":"https://hooks.example/again"}`, "https://hooks.example/again"},
		{`{"webhook_url":""}`, ""},
	} {
		if r := e.patch(tc.body); r.status != 200 {
			t.Fatalf("%s: %d %s", tc.body, r.status, r.body)
		}
		if got := e.rdb.HGet(context.Background(), cfg, "webhook_url").Val(); got != tc.want {
			t.Fatalf("%s: stored %q", tc.body, got)
		}
	}
	for _, body := range []string{
		`{"webhook_url":"http://hooks.example/w"}`,
		`{"webhook_url":"ftp://hooks.example/w"}`,
		`{"webhook_url":"https://user:pw@hooks.example/w"}`,
		`{"webhook_url":"/relative"}`,
		`{"webhook_url":42}`,
		`{"webhook_url":"https://hooks.example/` + strings.Repeat("a", 2100) + `"}`,
		`{"webhook_url":"https://hooks.example/w","refill_size":0}`,
	} {
		r := e.patch(body)
		var b httpkit.ErrorBody
		_ = json.Unmarshal(r.body, &b)
		if r.status != 400 || b.Error.Code != "invalid_settings" {
			t.Fatalf("%.80s: %d %s", body, r.status, r.body)
		}
	}
	for _, entry := range e.auditEntries("") {
		for _, c := range entry.Changes {
			if strings.Contains(string(c.New), "s3cret") || strings.Contains(string(c.Old), "s3cret") {
				t.Fatalf("the audit log keeps a webhook URL's query: %s", c.New)
			}
		}
	}
}
