package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// slowEnter is how late the answer to an enter comes: just past the
// page's first request timeout (REQUEST_TIMEOUT_MS in waiting-api.js).
const slowEnter = 10500 * time.Millisecond

// A link or a server slower than the page's request timeout. The page
// gives up on its first enter (whose place the server made: its cookie
// was in the answer the page gave up on), finds no place and enters
// again, this time waiting longer, and joins. With a fixed timeout it
// entered again and again, on "Joining the line…" for good, one more
// place at the back each time.
func TestSlowEnterStillJoins(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Minute}})
	s.fillWaiting("ahead", 2)
	slow := slowEnters(t, s.url)
	b := newBrowser(t, chromium)

	b.navigate(slow + "/q/" + s.queue)
	b.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	if n := s.enterRequests(); n != 2 {
		t.Errorf("%d enter requests, want 2: the one given up on and the one answered", n)
	}
	if tk := s.status(s.member(b)); tk.Status != queue.Waiting {
		t.Errorf("the page's place is %+v, want waiting", tk)
	}
}

// slowEnters is a proxy to the server at target that answers each enter
// slowEnter after the server did (the server has made the place by
// then, as a slow link would deliver it late), and everything else at
// once. It returns its URL; cookies are the same (one host).
func slowEnters(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/enter") {
			proxy.ServeHTTP(w, r)
			return
		}
		answer := httptest.NewRecorder()
		proxy.ServeHTTP(answer, r.WithContext(context.WithoutCancel(r.Context())))
		select {
		case <-time.After(slowEnter): // the slow link, not a wait for a condition
		case <-r.Context().Done(): // the page gave up: its answer is lost
			return
		}
		for k, v := range answer.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(answer.Code)
		_, _ = w.Write(answer.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A page whose script is lost on the way, as Chromium drops every
// request in flight when the network changes (net::ERR_NETWORK_CHANGED:
// a phone leaving Wi-Fi, or here Docker starting a container). No module
// runs then, and the page stayed on "Joining the line…" for good (seen
// in the page tests). It reloads itself (its inline rescue, which cannot
// be lost with them: every script file of the first load is) and joins.
func TestLostScriptReloads(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Minute}})
	s.fillWaiting("ahead", 2)
	lossy, loads := losesFirst(t, s.url, "/_waitroom/static/")
	b := newBrowser(t, chromium)

	b.navigate(lossy + "/q/" + s.queue)
	b.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	// Two: the one that lost its scripts and the reload. More when the
	// network changed under Chromium meanwhile (Docker starting another
	// test's container), which the rescue also reloads.
	if n := loads(); n < 2 {
		t.Errorf("the page was loaded %d times, want 2: the one that lost its script and the reload", n)
	}
	if n := s.enterRequests(); n != 1 {
		t.Errorf("%d enter requests, want 1", n)
	}
}

// losesFirst is a proxy to the server at target that cuts off every
// answer for a script under prefix while it has served one waiting page (the preload and
// the import both fail, as when the network changes), and passes
// everything else. It returns its URL and the count of waiting pages it
// served.
func losesFirst(t *testing.T, target, prefix string) (string, func() int) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	var pages atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/q/") {
			pages.Add(1)
		}
		if strings.HasPrefix(r.URL.Path, prefix) && strings.HasSuffix(r.URL.Path, ".js") && pages.Load() == 1 {
			// Cut off in the middle of the answer: a browser does not
			// try again (as it would a connection closed before it).
			conn, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			_, _ = rw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/javascript\r\nContent-Length: 1000\r\n\r\n// cut")
			_ = rw.Flush()
			conn.Close()
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() int { return int(pages.Load()) }
}
