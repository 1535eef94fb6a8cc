package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/config"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/redistest"
)

// fastTicks admits refill users per second: the tests see ticks quickly.
func fastTicks(refill int) queue.Settings {
	return queue.Settings{RefillSize: refill, RefillInterval: time.Second, SessionTTL: time.Minute}
}

// orderPage is a fake order page on another origin, where admitted users
// are sent.
type orderPage struct {
	url string
	mu  sync.Mutex
	got []url.Values // query of each request to /order
}

func newOrderPage(t *testing.T) *orderPage {
	o := &orderPage{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/order" {
			http.NotFound(w, r)
			return
		}
		o.mu.Lock()
		o.got = append(o.got, r.URL.Query())
		o.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Order</title></head>`+
			`<body><h1 id="order">Order page</h1><p>Welcome in.</p></body></html>`)
	}))
	t.Cleanup(srv.Close)
	o.url = srv.URL + "/order"
	return o
}

func (o *orderPage) requests() []url.Values {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]url.Values(nil), o.got...)
}

// jsState is a condition on body[data-state].
func jsState(state string) string {
	return fmt.Sprintf(`document.body.dataset.state === %q`, state)
}

// A user who arrives after the tokens ran out sees their place and an
// estimate, moves up with the ticks and is sent to the order page.
func TestWaitingUserIsAdmittedAndRedirected(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	order := newOrderPage(t)
	s := newStack(t, stackOptions{settings: fastTicks(1), targetURL: order.url})
	b := newBrowser(t, chromium)
	const user = "e2e-alice"
	s.fillWaiting("ahead", 5)

	b.navigate(s.url + "/q/" + s.queue + "?user_id=" + user)
	b.waitJS(10*time.Second, "the waiting state", jsState("waiting"))

	first := b.number("#position")
	if first < 2 {
		t.Fatalf("position %d on the first screen; expected people ahead", first)
	}
	if ahead := b.number("#ahead"); ahead != first-1 {
		t.Errorf("#ahead = %d, want position-1 = %d", ahead, first-1)
	}
	if total := b.number("#waiting-total"); total < first {
		t.Errorf("#waiting-total = %d, below the position %d", total, first)
	}
	if eta := b.text("#eta"); eta == "" || eta == "–" {
		t.Errorf("#eta shows no estimate: %q", eta)
	}
	// A handful of people at one per second: well under a minute.
	if st := b.text("#status-text"); !strings.HasSuffix(st, "people are waiting; up to 1 minute") {
		t.Errorf("#status-text = %q, want the line summary ending in 'up to 1 minute'", st)
	}
	// The page shows what the store says (the store may be a tick ahead).
	if tk := s.status(user); tk.Status != queue.Waiting || tk.Position > first {
		t.Errorf("store ticket %+v, page position %d", tk, first)
	}
	b.screenshot("waiting")

	b.waitJS(10*time.Second, "the position to drop after a tick", fmt.Sprintf(
		`document.body.dataset.state === 'waiting' && Number(document.getElementById('position').textContent.replace(/,/g, '')) < %d`, first))
	if p := b.number("#position"); p >= first {
		t.Fatalf("position %d, want below %d", p, first)
	}
	if pct := eval[float64](b, `document.getElementById('progress').value`); pct <= 0 {
		t.Errorf("progress %v%% after moving up", pct)
	}
	b.screenshot("moved-up")

	b.waitJS(20*time.Second, "the redirect to the order page",
		fmt.Sprintf(`location.href.startsWith(%q)`, order.url))
	b.waitJS(5*time.Second, "the order page to load", `document.getElementById('order') !== null`)
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	if q := u.Query(); q.Get("queue") != s.queue || q.Get("user_id") != user {
		t.Errorf("landed on %s, want queue=%s and user_id=%s", loc, s.queue, user)
	}
	reqs := order.requests()
	if len(reqs) != 1 || reqs[0].Get("user_id") != user || reqs[0].Get("queue") != s.queue {
		t.Errorf("order page got %v, want one request for %s", reqs, user)
	}
	if tk := s.status(user); tk.Status != queue.Entered {
		t.Errorf("store status %s after the redirect, want ENTERED", tk.Status)
	}
	b.screenshot("order-page")
}

// A reload resumes the same place: the page keeps the user id in
// localStorage and asks for the status instead of entering again (which
// would send the user to the back).
func TestReloadKeepsPlace(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1)})
	b := newBrowser(t, chromium)
	s.fillWaiting("ahead", 8)

	b.navigate(s.url + "/q/" + s.queue) // no user_id: the page makes one up
	b.waitJS(10*time.Second, "the waiting state", jsState("waiting"))
	userKey := fmt.Sprintf(`localStorage.getItem(%q)`, "waitroom:user:"+s.queue)
	user := eval[string](b, userKey)
	if user == "" {
		t.Fatal("no user id in localStorage")
	}
	if tk := s.status(user); tk.Status != queue.Waiting {
		t.Fatalf("store status of %s = %s, want WAITING", user, tk.Status)
	}
	s.fillWaiting("behind", 5) // people behind: the tail is no longer our place
	before := b.number("#position")
	b.screenshot("before-reload")

	statusCalls := func() int {
		return s.calls.count(func(c call) bool {
			return c.method == http.MethodGet && strings.HasSuffix(c.path, "/status") && c.user == user
		})
	}
	callsBefore := statusCalls()
	b.do("reload", chromedp.Reload())
	b.waitJS(10*time.Second, "the waiting state after the reload", jsState("waiting"))

	if got := eval[string](b, userKey); got != user {
		t.Errorf("user id after reload = %q, want %q", got, user)
	}
	if statusCalls() <= callsBefore {
		t.Errorf("no status request for %s after the reload", user)
	}
	if enters := s.enterRequests(); enters != 1 {
		t.Errorf("%d enter requests, want 1 (a reload must not enter again)", enters)
	}
	tk := s.status(user)
	if tk.Status != queue.Waiting || tk.Position > before || tk.Position >= tk.Waiting {
		t.Errorf("after reload the store has %+v; want WAITING at or before position %d and not at the tail", tk, before)
	}
	if after := b.number("#position"); after > before {
		t.Errorf("page position %d after reload, was %d", after, before)
	}
	b.screenshot("after-reload")
}

// Leaving through the dialog removes the user from the line.
func TestLeaveRemovesUser(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1)})
	b := newBrowser(t, chromium)
	const user = "e2e-leaver"
	s.fillWaiting("ahead", 8)

	b.navigate(s.url + "/q/" + s.queue + "?user_id=" + user)
	b.waitJS(10*time.Second, "the waiting state", jsState("waiting"))

	dialogOpen := `document.getElementById('leave-dialog').open`
	b.do("open the dialog", chromedp.Click(chromedp.CSS("#leave-btn")))
	b.waitJS(5*time.Second, "the leave dialog", dialogOpen)
	b.screenshot("leave-dialog")

	b.do("stay in line", chromedp.Click(chromedp.CSS("#leave-cancel")))
	b.waitJS(5*time.Second, "the dialog to close", `!`+dialogOpen+` && `+jsState("waiting"))
	if tk := s.status(user); tk.Status != queue.Waiting {
		t.Fatalf("after 'stay in line' the store status is %s, want WAITING", tk.Status)
	}

	b.do("leave", chromedp.Click(chromedp.CSS("#leave-btn")))
	b.waitJS(5*time.Second, "the leave dialog", dialogOpen)
	b.do("confirm", chromedp.Click(chromedp.CSS("#leave-confirm")))
	b.waitJS(5*time.Second, "the left state",
		jsState("left")+` && !document.getElementById('left').hidden && !`+dialogOpen)
	eventually(t, 5*time.Second, "the store to forget the user", func() (bool, string) {
		tk := s.status(user)
		return tk.Status == queue.NotWaiting, string(tk.Status)
	})
	// The store changes before the handler returns and the call is recorded.
	eventually(t, 5*time.Second, "one successful DELETE", func() (bool, string) {
		n := s.calls.count(func(c call) bool {
			return c.method == http.MethodDelete && strings.HasSuffix(c.path, "/users/"+user) && c.status == http.StatusNoContent
		})
		return n == 1, fmt.Sprintf("%d", n)
	})
	if enters := s.enterRequests(); enters != 1 {
		t.Errorf("%d enter requests, want 1", enters)
	}
	if place := eval[bool](b, fmt.Sprintf(`localStorage.getItem(%q) === null`, "waitroom:place:"+s.queue)); !place {
		t.Error("the saved place is still in localStorage after leaving")
	}
	b.screenshot("left")
}

// Redis freezes while a user waits: the page shows that it is reconnecting,
// keeps polling status (never entering again, which would send the user to
// the back) and carries on in the same place once Redis answers. The page
// also switches to Korean on request.
func TestReconnectKeepsPlace(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	ctr := redistest.NewContainer(t)
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cfg.RedisOptions()
	if err != nil {
		t.Fatal(err)
	}
	settings := queue.Settings{RefillSize: 1, RefillInterval: 10 * time.Second, SessionTTL: time.Minute}
	s := newStack(t, stackOptions{settings: settings, redis: ctr.Client(t, opts)})
	b := newBrowser(t, chromium)
	const user = "e2e-carol"
	s.fillWaiting("ahead", 4)

	b.navigate(s.url + "/q/" + s.queue + "?user_id=" + user)
	b.waitJS(10*time.Second, "the waiting state", jsState("waiting"))
	before := s.status(user)
	if before.Status != queue.Waiting {
		t.Fatalf("store: %+v", before)
	}

	b.do("switch to Korean", chromedp.Click(chromedp.CSS("#lang-ko")))
	b.waitJS(5*time.Second, "Korean", `document.documentElement.lang === 'ko'`)
	if txt := b.text("#status-text"); !strings.ContainsFunc(txt, func(r rune) bool { return r >= 0xAC00 && r <= 0xD7A3 }) {
		t.Errorf("status text after switching to Korean has no Hangul: %q", txt)
	}
	b.screenshot("korean")

	if err := ctr.Pause(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.waitJS(40*time.Second, "the reconnecting notice", `!document.getElementById('reconnecting').hidden`)
	if got := b.text("#position"); got == "" {
		t.Error("position vanished while reconnecting")
	}
	b.screenshot("reconnecting")
	if err := ctr.Unpause(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.waitJS(60*time.Second, "the page to reconnect",
		`document.getElementById('reconnecting').hidden && document.body.dataset.state === 'waiting'`)
	b.screenshot("reconnected")

	failed := s.calls.count(func(c call) bool { return c.status == 503 })
	if enters := s.enterRequests(); enters != 1 {
		t.Errorf("%d enter requests, want 1: a failed poll must not re-enter", enters)
	}
	if failed == 0 {
		t.Error("no request failed while Redis was frozen; the test did not test anything")
	}
	after := s.status(user)
	if after.Status != queue.Waiting && after.Status != queue.Entered {
		t.Fatalf("after the outage the user is %s", after.Status)
	}
	if after.Status == queue.Waiting && after.Position > before.Position {
		t.Fatalf("position went from %d to %d across the outage", before.Position, after.Position)
	}
}
