package gate

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The fail-open line: the first request at once, then at most one line a
// minute, each with the count since the last.
func TestFailOpenLoggedOnceAMinute(t *testing.T) {
	var out bytes.Buffer
	g := &Gate{queue: "q", log: slog.New(slog.NewTextHandler(&out, nil)), reach: &reach{}}
	r := httptest.NewRequest("GET", "/", nil)
	rm := &room{queue: "q"}
	for range 1000 {
		g.failedOpen(r, rm)
	}
	if n := strings.Count(out.String(), "failing open"); n != 1 || !strings.Contains(out.String(), "passed_since_last_line=1 ") {
		t.Fatalf("1000 requests in a burst: %d lines\n%s", n, out.String())
	}
	// A minute later (moved back, not waited for): one more line, counting
	// the 999 not yet told plus this one.
	g.openLog.mu.Lock()
	g.openLog.last = g.openLog.last.Add(-failOpenLogEvery - time.Millisecond)
	g.openLog.mu.Unlock()
	g.failedOpen(r, rm)
	g.failedOpen(r, rm)
	if n := strings.Count(out.String(), "failing open"); n != 2 || !strings.Contains(out.String(), "passed_since_last_line=1000 ") {
		t.Fatalf("a minute later: %d lines\n%s", n, out.String())
	}
}
