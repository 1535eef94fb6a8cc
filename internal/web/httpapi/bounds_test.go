package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// Bodies that encoding/json read as another body's meaning: an
// id of invalid UTF-8 or a lone surrogate became U+FFFD, so different ids
// shared a place; a key given twice or in another case let a proxy and the
// service read different ids. Each is now 400 invalid_json, against the
// real router and Redis; a well-formed escaped id still enters.
func TestEnterRefusesAmbiguousBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout, Options{InsecureUserIDs: true})
	api := "/api/v1/queues/" + e.queue
	for _, tc := range []struct{ name, body string }{
		{"invalid UTF-8", "{\"user_id\":\"bob\xff\"}"},
		{"invalid UTF-8, another byte", "{\"user_id\":\"bob\xfe\"}"},
		{"lone high surrogate", `{"user_id":"bob\ud800"}`},
		{"lone low surrogate", `{"user_id":"bob\udfff"}`},
		{"duplicate key", `{"user_id":"alice","user_id":"mallory"}`},
		{"case-folded key", `{"USER_ID":"alice"}`},
		{"case-folded and exact", `{"user_id":"alice","User_Id":"mallory"}`},
		{"unknown field", `{"user_id":"alice","admin":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", api+"/enter", tc.body)
			var b httpkit.ErrorBody
			if r.status != http.StatusBadRequest || json.Unmarshal(r.body, &b) != nil || b.Error.Code != "invalid_json" {
				t.Fatalf("enter %q: %d %s; want 400 invalid_json", tc.body, r.status, r.body)
			}
		})
	}
	// The ids the lenient decoder made of the first four never got a place.
	if r := e.do("GET", api+"/status?user_id=bob%EF%BF%BD", ""); strings.Contains(string(r.body), `"WAITING"`) || strings.Contains(string(r.body), `"ENTERED"`) {
		t.Fatalf("bob\\uFFFD has a place: %d %s", r.status, r.body)
	}
	if tk := decodeTicket(t, e.do("POST", api+"/enter", `{"user_id":"b\u00f6b\ud83d\ude00"}`)); tk.UserID != "böb😀" {
		t.Fatalf("escaped id entered as %q", tk.UserID)
	}
}
