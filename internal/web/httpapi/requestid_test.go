package httpapi

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// requestIDShape is what a request id may be: what the logs and the audit
// log ever hold.
var requestIDShape = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Through the real server: the access log of waitroom's own routes and
// of the gated paths, and the audit log, carry the client's id when it is
// valid and one of waitroom's own otherwise.
func TestRequestIDInLogs(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken,
		Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	for i, sent := range []string{"op-7f3a.change_1", strings.Repeat("b", 64), strings.Repeat("c", 65), "two words", "naïve", `x","forged":"1`} {
		own, gated := fmt.Sprintf("/api/v1/queues/nope%d", i), fmt.Sprintf("/elsewhere%d", i)
		for _, path := range []string{own, gated} {
			if r := e.do("GET", path, "", "X-Request-Id", sent); r.status != 404 {
				t.Fatalf("GET %s: %d", path, r.status)
			}
		}
		if r := e.do("PATCH", "/admin/v1/queues/"+e.queue, fmt.Sprintf(`{"max_active":%d}`, i+1), "Authorization", "Bearer "+adminToken, "X-Request-Id", sent); r.status != 200 {
			t.Fatalf("patch: %d %s", r.status, r.body)
		}
		logged := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var l struct {
				Msg       string `json:"msg"`
				Path      string `json:"path"`
				RequestID string `json:"request_id"`
			}
			if json.Unmarshal([]byte(line), &l) != nil {
				t.Fatalf("log line %q", line)
			}
			if l.Msg == "request" {
				logged[l.Path] = l.RequestID
			}
		}
		audited := e.auditEntries("?limit=1")[0].RequestID
		for where, got := range map[string]string{"own route's log": logged[own], "gated path's log": logged[gated], "audit": audited} {
			if !requestIDShape.MatchString(got) || (got == sent) != requestIDShape.MatchString(sent) {
				t.Errorf("sent %q: the %s has %q", sent, where, got)
			}
		}
	}
}
