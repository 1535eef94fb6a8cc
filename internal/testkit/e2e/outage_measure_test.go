package e2e

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/envconfig"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// A measurement, not a check (docs/attacks/pages.md): what one gate page
// without a pass and one open waiting page in line ask of the server
// during 90 s of Redis paused. Runs only with WAITROOM_MEASURE=1:
//
//	WAITROOM_MEASURE=1 go test -count=1 -v -run TestOutageRequestCount ./internal/testkit/e2e/
func TestOutageRequestCount(t *testing.T) {
	if os.Getenv("WAITROOM_MEASURE") == "" {
		t.Skip("a measurement: set WAITROOM_MEASURE=1")
	}
	chromium := chromiumPath(t)
	ctr := redistest.NewContainer(t)
	order := orderSite(t)
	fs := newFailStack(t, ctr, gate.FailClosed, order, "", false)
	opts := envconfig.SingleRedis(t, envconfig.Load(t, nil))
	ws := newStack(t, stackOptions{settings: queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Minute}, redis: ctr.Client(t, opts)})
	ws.fillWaiting("ahead", 3)
	w := newBrowser(t, chromium)
	g := newBrowser(t, chromium)
	w.navigate(ws.url + "/q/" + ws.queue)
	w.waitJS(30*time.Second, "waiting", `document.body.dataset.state === 'waiting'`)
	unpause := pauseRedis(t, ctr)
	wait.For(t, 10*time.Second, "away", func() (bool, string) { return statusOf(t, fs.url+"/order") == 503, "" })
	start := time.Now()
	g.navigate(fs.url + "/order")
	time.Sleep(90*time.Second - time.Since(start)) // the window measured, not a wait for a condition
	end := time.Now()
	unpause()
	in := func(c call) bool { return c.at.After(start) && c.at.Before(end) }
	atGate := fs.calls.count(func(c call) bool { return in(c) && c.path == "/order" })
	status := ws.calls.count(func(c call) bool { return in(c) && strings.HasSuffix(c.path, "/status") })
	failed := ws.calls.count(func(c call) bool {
		return in(c) && strings.HasSuffix(c.path, "/status") && c.status == http.StatusServiceUnavailable
	})
	t.Logf("over %s of Redis paused: gate page requests %d; waiting page status calls %d, %d of them answered 503",
		end.Sub(start).Round(time.Second), atGate, status, failed)
}
