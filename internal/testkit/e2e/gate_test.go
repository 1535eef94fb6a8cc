package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/demo"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// The whole flow through the reverse-proxy gate, with the demo order page
// (protected by the gate middleware too) as the upstream: the order page
// sends a newcomer to the waiting page, the admitted user comes back with
// the pass in a cookie and none in the address, "done" ends the turn, and
// the order page is closed again.
func TestGateFlowToTheOrderPage(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)

	// The demo needs waitroom's address and waitroom the demo's: start the
	// demo's listener first, its handler once the stack exists.
	order := httptest.NewUnstartedServer(nil)
	order.Start()
	t.Cleanup(order.Close)
	orderURL, _ := url.Parse(order.URL)
	s := newStack(t, stackOptions{settings: fastTicks(1), upstream: orderURL})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h, err := demo.New(ctx, demo.Options{
		Queue:          s.queue,
		Waitroom:       s.url,
		Issuer:         issuer,
		WaitingPage:    "/q/" + s.queue,
		InsecureCookie: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	order.Config.Handler = h
	b := newBrowser(t, chromium)
	s.fillWaiting("ahead", 3)

	b.navigate(s.url + "/?from=home")
	b.waitJS(joinDeadline, "the waiting page", jsState("waiting")+` && location.pathname === '/q/`+s.queue+`'`)
	if ret := eval[string](b, `new URLSearchParams(location.search).get('return')`); ret != "/?from=home" {
		t.Fatalf("waiting page return = %q, want /?from=home", ret)
	}
	b.screenshot("gate-waiting")

	b.waitJS(30*time.Second, "the order page after admission", `document.getElementById('event') !== null`)
	loc := eval[string](b, `location.pathname + location.search`)
	if loc != "/?from=home" || strings.Contains(loc, "wr_pass") {
		t.Fatalf("landed on %q: want /?from=home, with no pass in the address", loc)
	}
	c := b.cookie(s.url, gate.CookieName(s.queue, false))
	if c == nil || !c.HTTPOnly || c.Value == "" {
		t.Fatalf("pass cookie %+v", c)
	}
	member := s.member(b)
	if got := b.text("#sub"); got != member {
		t.Fatalf("the order page says it admitted %q, the place is %q", got, member)
	}
	if a := s.verify(c.Value); a.Status != http.StatusOK || a.Sub != member {
		t.Fatalf("verify of the cookie's pass: %+v", a)
	}
	b.screenshot("gate-order-page")

	b.do("buy", chromedp.Click(chromedp.CSS("#buy")))
	b.waitJS(5*time.Second, "the booking", `document.getElementById('bought') !== null`)
	b.do("done", chromedp.Click(chromedp.CSS("#done")))
	b.waitJS(5*time.Second, "the done page", `document.getElementById('finished') !== null`)
	b.screenshot("gate-done")
	if tk := s.status(member); tk.Status != queue.NotWaiting {
		t.Fatalf("after done the store has %+v", tk)
	}
	if a := s.verify(c.Value); a.Status != http.StatusUnauthorized {
		t.Fatalf("after done the pass verifies: %+v", a)
	}
	// The order page is closed to that pass again (within the gate's
	// re-check period)...
	wait.For(t, 30*time.Second, "the gate to refuse the done pass", func() (bool, string) {
		req, _ := http.NewRequest("GET", s.url+"/", nil)
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		resp, err := noRedirects.Do(req)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusSeeOther && strings.HasPrefix(resp.Header.Get("Location"), "/q/"), resp.Status
	})
	// ... and the browser, whose pass cookie the order page dropped, goes
	// through the waiting page again (where it joins the back of the line).
	pages := func() int {
		return s.calls.count(func(c call) bool { return c.method == http.MethodGet && c.path == "/q/"+s.queue })
	}
	before := pages()
	b.navigate(s.url + "/")
	wait.For(t, 30*time.Second, "the waiting page again", func() (bool, string) {
		n := pages()
		return n > before, fmt.Sprintf("%d waiting page loads", n-before)
	})
}

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
	return http.ErrUseLastResponse
}}

// A pass used from more addresses than WAITROOM_PASS_MAX_CLIENTS (3) is
// cancelled, and the browser that held it, sent back to the waiting page,
// is told why.
func TestSharedPassTellsTheHolder(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	order := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>order</title><h1 id="order">order page</h1>`)
	}))
	t.Cleanup(order.Close)
	orderURL, _ := url.Parse(order.URL)
	s := newStack(t, stackOptions{settings: fastTicks(1), upstream: orderURL, behindProxy: true})
	b := newBrowser(t, chromium)
	b.navigate(s.url + "/order")
	b.waitJS(30*time.Second, "the order page after admission", `document.getElementById('order') !== null`)
	c := b.cookie(s.url, gate.CookieName(s.queue, false))
	if c == nil {
		t.Fatal("no pass cookie")
	}
	// The browser is 127.0.0.1; three more addresses make four.
	for _, addr := range []string{"198.18.0.1", "198.18.0.2", "198.18.0.3"} {
		req, _ := http.NewRequest("GET", s.url+"/order", nil)
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		req.Header.Set("X-Forwarded-For", addr)
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// Paused, so the page that joins again stays in line with its notice
	// instead of being let in again at once.
	paused := true
	s.update(queue.Update{Paused: &paused})
	b.navigate(s.url + "/order")
	b.waitJS(15*time.Second, "the used-elsewhere notice", `location.pathname === '/q/`+s.queue+`' && `+
		`!document.getElementById('notice').hidden && document.getElementById('notice').textContent.includes('too many places')`)
	b.screenshot("gate-used-elsewhere")
}

// Someone who opens the gate queue's waiting page directly (no return
// path, no target URL) is given a way on when admitted: a Continue link to
// the site through the gate, never a bare pass.
func TestGateTurnWithoutReturnContinues(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	order := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>order</title><h1 id="order">order page</h1>`)
	}))
	t.Cleanup(order.Close)
	orderURL, _ := url.Parse(order.URL)
	s := newStack(t, stackOptions{settings: fastTicks(1), upstream: orderURL})
	b := newBrowser(t, chromium)
	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(30*time.Second, "the Continue link", `!document.getElementById('turn-link').hidden`)
	if href := eval[string](b, `document.getElementById('turn-link').getAttribute('href')`); !strings.HasPrefix(href, "/?wr_pass=") {
		t.Fatalf("the Continue link goes to %q", href)
	}
	b.screenshot("gate-turn-continue")
	b.do("continue", chromedp.Click(chromedp.CSS("#turn-link")))
	b.waitJS(10*time.Second, "the order page", `document.getElementById('order') !== null && !location.search.includes('wr_pass')`)
}
