package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// journal is what a page did, in order: its requests (when sent, the
// answer's status, when done or why failed) and its console. A test that
// times out waiting on a page prints it, so a stall says what the page
// was waiting on (a page once "stayed on Joining the line…").
type journal struct {
	start time.Time

	mu      sync.Mutex
	lines   []string
	pending map[network.RequestID]sent // requests sent and not yet done

	// netChanged counts the requests Chromium dropped because the network
	// changed under it (net::ERR_NETWORK_CHANGED), navigate's reason to
	// load a page again.
	netChanged atomic.Int64
}

// sent is a request the page sent: "METHOD path", its URL and when.
type sent struct {
	what, method, url string
	at                time.Time
}

// journalMax bounds the lines kept: a page polling for a minute makes a
// few hundred requests, and the last ones say why it stalls.
const journalMax = 400

// listen starts the journal of ctx's tab. It must return before the
// page it should see is opened.
func (j *journal) listen(ctx context.Context) error {
	j.start = time.Now()
	j.pending = map[network.RequestID]sent{}
	return chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			what := e.Request.Method + " " + shortURL(e.Request.URL)
			at := time.Now()
			if w := e.WallTime.Float64(); w > 0 {
				at = time.UnixMicro(int64(w * 1e6)) // when sent, not when this event was heard
			}
			j.mu.Lock()
			j.pending[e.RequestID] = sent{what: what, method: e.Request.Method, url: e.Request.URL, at: at}
			j.mu.Unlock()
			j.add("→ %s", what)
		case *network.EventResponseReceived:
			j.add("← %s %d", j.name(e.RequestID, false), e.Response.Status)
		case *network.EventLoadingFinished:
			j.name(e.RequestID, true)
		case *network.EventLoadingFailed:
			if strings.Contains(e.ErrorText, "ERR_NETWORK_CHANGED") {
				j.netChanged.Add(1)
			}
			j.add("✗ %s %s canceled=%v", j.name(e.RequestID, true), e.ErrorText, e.Canceled)
		case *runtime.EventConsoleAPICalled:
			j.add("console.%s %s", e.Type, consoleArgs(e.Args))
		case *runtime.EventExceptionThrown:
			j.add("exception %s", e.ExceptionDetails.Text)
		}
	})
}

// name is the request's "METHOD path", forgotten when done.
func (j *journal) name(id network.RequestID, done bool) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	what := j.pending[id].what
	if done {
		delete(j.pending, id)
	}
	return what
}

// open is the requests sent at least age ago and not yet done.
func (j *journal) open(age time.Duration) []sent {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []sent
	for _, s := range j.pending {
		if time.Since(s.at) >= age {
			out = append(out, s)
		}
	}
	return out
}

func (j *journal) add(format string, args ...any) {
	line := fmt.Sprintf("%7.3fs ", time.Since(j.start).Seconds()) + fmt.Sprintf(format, args...)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, line)
	if len(j.lines) > journalMax {
		j.lines = j.lines[len(j.lines)-journalMax:]
	}
}

// String is the journal's last lines and the requests still open.
func (j *journal) String() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var sb strings.Builder
	sb.WriteString("page journal (seconds since the browser started):\n")
	lines := j.lines
	if len(lines) > 80 {
		fmt.Fprintf(&sb, "  … %d earlier lines\n", len(lines)-80)
		lines = lines[len(lines)-80:]
	}
	for _, l := range lines {
		sb.WriteString("  " + l + "\n")
	}
	for _, s := range j.pending {
		sb.WriteString("  still open: " + s.what + "\n")
	}
	return sb.String()
}

// shortURL drops the scheme and host: the tests' pages all come from one.
func shortURL(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		if k := strings.IndexByte(u[i+3:], '/'); k >= 0 {
			return u[i+3+k:]
		}
	}
	return u
}

func consoleArgs(args []*runtime.RemoteObject) string {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		if a.Value != nil {
			parts = append(parts, string(a.Value))
		} else {
			parts = append(parts, a.Description)
		}
	}
	return strings.Join(parts, " ")
}

// A request counts as lost in Chromium only when the server never saw
// it: one the server received and is slow to answer is ours to explain.
func TestLostRequestsAreThoseTheServerNeverSaw(t *testing.T) {
	rec := &recorder{}
	host := "127.0.0.1:1" // no stack serves it
	recorders.Store(host, rec)
	t.Cleanup(func() { recorders.Delete(host) })
	b := &browser{t: t}
	b.journal.pending = map[network.RequestID]sent{}
	old := time.Now().Add(-2 * stallAfter)
	b.journal.pending["a"] = sent{what: "GET /static/a.js", method: "GET", url: "http://" + host + "/static/a.js", at: old}
	b.journal.pending["b"] = sent{what: "GET /static/b.js", method: "GET", url: "http://" + host + "/static/b.js", at: old}
	b.journal.pending["new"] = sent{what: "GET /static/c.js", method: "GET", url: "http://" + host + "/static/c.js", at: time.Now()}
	b.journal.pending["elsewhere"] = sent{what: "GET /x", method: "GET", url: "http://127.0.0.1:2/x", at: old}
	rec.arrivals = append(rec.arrivals, arrival{method: "GET", path: "/static/b.js", at: old.Add(time.Millisecond)})
	if got := b.lost(); len(got) != 1 || got[0] != "GET /static/a.js" {
		t.Fatalf("lost = %q, want only the request the server never saw, sent over %v ago", got, stallAfter)
	}
}
