package httpapi

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/web/linedoc"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

// TestCloseSale closes a sale through the real router: the body is
// checked, a newcomer gets 410 sale_closed with the message in their
// language, a waiting place's status says CLOSED with it, an admitted
// user stays ENTERED, the line's document carries it, the audit log names
// the actor, and a reopening takes enters again.
func TestCloseSale(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, InsecureUserIDs: true})
	auth := []string{"Authorization", "Bearer " + adminToken}
	path := "/admin/v1/queues/" + e.queue
	e.enter("in1")
	e.enter("in2")
	e.enter("w1") // waits: two tokens

	for body, field := range map[string]string{
		`{"message":{}}`:                                             "message",
		`{"message":{"en":"a\u0007b"}}`:                              "message",
		`{"message":{"not a tag":"x"}}`:                              "message",
		`{"message":{"en":"` + strings.Repeat("x", 281) + `"}}`:      "message",
		`{"message":{"en":"x"},"reopens_at":"tomorrow"}`:             "reopens_at",
		`{"message":{"en":"x"},"reopens_at":"2001-01-01T00:00:00Z"}`: "reopens_at",
		`{"message":{"en":"x"},"reopens_at":"2999-01-01T00:00:00Z"}`: "reopens_at",
	} {
		r := e.do("POST", path+"/close", body, auth...)
		wantError(t, r, 400, "invalid_settings")
		if !strings.Contains(string(r.body), `"field":"`+field+`"`) {
			t.Errorf("%s: %s, want field %s", body, r.body, field)
		}
	}
	wantError(t, e.do("POST", path+"/close", `{"message":{"en":"x"},"extra":1}`, auth...), 400, "invalid_json")
	wantError(t, e.do("POST", path+"/close", `{"message":{"en":"x"}}`), 401, "unauthorized")

	reopens := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	r := e.do("POST", path+"/close", `{"message":{"en":"Sold out, sorry.","ko":"매진되었습니다."},"reopens_at":"`+reopens+`"}`, auth...)
	var view struct {
		Closed        bool              `json:"closed"`
		ClosedMessage map[string]string `json:"closed_message"`
		ReopensAt     string            `json:"reopens_at"`
	}
	if err := json.Unmarshal(r.body, &view); r.status != 200 || err != nil || !view.Closed || view.ClosedMessage["ko"] != "매진되었습니다." || view.ReopensAt != reopens {
		t.Fatalf("close: %d %s", r.status, r.body)
	}

	body, _ := json.Marshal(publicapi.EnterRequest{UserID: ptrTo("late")})
	r = e.do("POST", "/api/v1/queues/"+e.queue+"/enter", string(body), "Accept-Language", "ko-KR,ko;q=0.9")
	wantError(t, r, 410, "sale_closed")
	if !strings.Contains(string(r.body), "매진되었습니다.") || !strings.Contains(string(r.body), `"reopens_at":"`+reopens+`"`) {
		t.Errorf("enter while closed, in Korean: %s", r.body)
	}
	if got := e.status("w1"); got.Status != "CLOSED" || got.Message != "Sold out, sorry." || got.ReopensAt != reopens || got.ETASeconds != nil {
		t.Errorf("a waiting place: %+v", got)
	}
	r = e.do("GET", "/api/v1/queues/"+e.queue+"/status?lang=ko&user_id="+url.QueryEscape("w1"), "")
	if got := decodeTicket(t, r); got.Message != "매진되었습니다." {
		t.Errorf("?lang=ko: %q", got.Message)
	}
	if got := e.status("in1"); got.Status != "ENTERED" {
		t.Errorf("an admitted user: %s, want ENTERED", got.Status)
	}
	if err := e.store.RefreshSnapshot(context.Background(), e.queue, true); err != nil {
		t.Fatal(err)
	}
	var doc linedoc.Body
	r = e.do("GET", "/api/v1/queues/"+e.queue+"/line", "")
	if err := json.Unmarshal(r.body, &doc); err != nil || !doc.Closed || doc.ClosedMessage["en"] != "Sold out, sorry." || doc.ReopensAt != reopens {
		t.Errorf("the line's document: %s", r.body)
	}
	entries := e.auditEntries("")
	if len(entries) == 0 || entries[0].Action != "close" || entries[0].Actor == nil {
		t.Errorf("audit: %+v", entries)
	}

	if r = e.do("POST", path+"/reopen", "", auth...); r.status != 200 || strings.Contains(string(r.body), `"closed":true`) {
		t.Fatalf("reopen: %d %s", r.status, r.body)
	}
	if got := e.enter("late"); got.Status != "WAITING" {
		t.Errorf("enter after the reopening: %s", got.Status)
	}
}

func ptrTo[T any](v T) *T { return &v }
