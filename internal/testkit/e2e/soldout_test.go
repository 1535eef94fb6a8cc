package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/web/pages"
	"github.com/waitroom/waitroom/internal/web/soldout"
)

// Sold out: a Korean page waits in line; the operator closes the sale from
// the back office (the confirmation names the people waiting) with a
// message in English and Korean. The page shows the closed panel with the
// Korean message and asks nothing more: over 10 s of the page's own
// (virtual) time, some nine of its poll intervals, it makes no request.
// A visitor without a pass who reaches the site through the gate gets the
// sold-out page, 410, and it asks nothing either. Reopened from the back
// office, the sale is open again.
func TestSoldOutClosesTheWaitingPage(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	order := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "order page")
	}))
	t.Cleanup(order.Close)
	orderURL, _ := url.Parse(order.URL)
	// Paused: nobody is admitted, so the line the operator is told of
	// stays 5 ahead and the page; it polls each second (near the head).
	paused := true
	s := newStack(t, stackOptions{settings: fastTicks(1), update: &queue.Update{Paused: &paused}, upstream: orderURL,
		gate: func(o *proxy.GateOptions, st *queue.Store) { o.SoldOut = soldout.New(st, pages.Default()) }})
	s.fillWaiting("ahead", 5)

	page := newBrowserIn(t, chromium, "ko-KR")
	page.navigate(s.url + "/q/" + s.queue)
	page.waitJS(10*time.Second, "a place in line", `document.body.dataset.state === 'waiting'`)

	const en, ko = "All seats are sold. Thank you for waiting.", "모든 좌석이 매진되었습니다. 기다려 주셔서 감사합니다."
	admin := newBrowser(t, chromium)
	admin.navigate(s.url + "/admin")
	admin.waitJS(5*time.Second, "the sign-in form", `document.body.dataset.state === 'signed-out'`)
	section := fmt.Sprintf(`document.querySelector('[data-queue=%q]')`, s.queue)
	admin.do("sign in", chromedp.SendKeys(chromedp.CSS("#token"), adminToken), chromedp.Click(chromedp.CSS("#login-btn")))
	admin.waitJS(5*time.Second, "the queue's section with 6 waiting", section+` !== null && `+section+`.querySelector('.waiting').textContent.startsWith('6 ')`)
	// The messages typed (an input event, as typing sends), then Close.
	admin.do("close the sale", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
	  const s = %s;
	  for (const [lang, text] of [['en', %q], ['ko', %q]]) {
	    const f = s.querySelector('[data-sale-lang="' + lang + '"]');
	    f.value = text;
	    f.dispatchEvent(new Event('input', { bubbles: true }));
	  }
	  s.querySelector('.sale-close').click();
	})()`, section, en, ko)))
	admin.waitJS(5*time.Second, "the confirmation", `!`+section+`.querySelector('.sale-confirm').hidden`)
	if got := admin.text(fmt.Sprintf(`[data-queue=%q] .sale-confirm-text`, s.queue)); !strings.HasPrefix(got, "6 people are waiting.") {
		t.Errorf("the confirmation says %q, want the 6 people waiting", got)
	}
	if ti, err := s.store.Status(t.Context(), s.queue, queue.Caller{User: "ahead-0"}); err != nil || ti.Status == queue.Closed {
		t.Fatalf("closed before the confirmation was answered (%v, %v)", ti.Status, err)
	}
	admin.do("confirm", chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-queue=%q] .sale-confirm-yes`, s.queue))))
	admin.waitJS(5*time.Second, "the closed note", `!`+section+`.querySelector('.closed-note').hidden && !`+section+`.querySelector('.sale-reopen').hidden`)
	if got := admin.text(fmt.Sprintf(`[data-queue=%q] .closed-message`, s.queue)); got != en {
		t.Errorf("the back office's closed note says %q, want %q", got, en)
	}

	// The page's next poll says CLOSED, in Korean.
	page.waitJS(10*time.Second, "the closed panel", `document.body.dataset.state === 'closed' && !document.getElementById('closed').hidden`)
	if got := page.text("#closed-text"); got != ko {
		t.Errorf("#closed-text = %q, want the Korean message %q", got, ko)
	}
	pageCalls := func() int {
		return s.calls.count(func(c call) bool { return !strings.HasPrefix(c.path, "/admin") })
	}
	before := pageCalls()

	// 10 s of the page's time, run as fast as Chromium can: its timers
	// fire, and any request it made would be seen (virtual time waits for
	// it).
	expired := make(chan struct{})
	var once sync.Once
	if err := chromedp.Listen(page.ctx, func(ev any) {
		if _, ok := ev.(*emulation.EventVirtualTimeBudgetExpired); ok {
			once.Do(func() { close(expired) })
		}
	}); err != nil {
		t.Fatal(err)
	}
	budget := float64(10 * time.Second / time.Millisecond)
	if _, err := chromedp.Call(page.ctx, emulation.SetVirtualTimePolicy, emulation.SetVirtualTimePolicyParams{
		Policy: emulation.VirtualTimePolicyPauseIfNetworkFetchesPending, Budget: &budget}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-expired:
	case <-time.After(60 * time.Second):
		t.Fatal("10 s of the page's time did not pass in 60 s")
	}
	if n := pageCalls() - before; n != 0 {
		t.Fatalf("the closed page made %d requests over 10 s of its time, want none: %v", n,
			s.calls.matching(func(c call) bool { return !strings.HasPrefix(c.path, "/admin") })[before:])
	}
	if st := eval[string](page, `document.body.dataset.state`); st != "closed" {
		t.Errorf("state %q after 10 s, want closed", st)
	}

	// Through the gate without a pass: the sold-out page, once this
	// replica's snapshot of the line (each tick's) says closed.
	// Waited for first: before the snapshot says so, the gate sends the
	// browser to the waiting page (303), which learns it from its status.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	wait.For(t, 30*time.Second, "the gate to answer 410", func() (bool, string) {
		req, _ := http.NewRequest(http.MethodGet, s.url+"/order", nil)
		req.Header.Set("Accept", "text/html")
		res, err := noRedirect.Do(req)
		if err != nil {
			return false, err.Error()
		}
		res.Body.Close()
		return res.StatusCode == http.StatusGone, res.Status
	})
	since := time.Now()
	admin.navigate(s.url + "/order")
	admin.waitJS(10*time.Second, "the sold-out page", `document.body.dataset.state === 'closed' && !document.getElementById('closed').hidden`)
	if got := admin.text("#closed-text"); got != en {
		t.Errorf("the sold-out page says %q, want %q", got, en)
	}
	gone := s.calls.matching(func(c call) bool { return c.path == "/order" && c.started.After(since) })
	if len(gone) == 0 || gone[len(gone)-1].status != http.StatusGone {
		t.Errorf("/order answered %v, want 410", gone)
	}
	if n := s.calls.count(func(c call) bool { return strings.HasPrefix(c.path, "/api/") && c.started.After(since) }); n != 0 {
		t.Errorf("the sold-out page made %d API requests, want none", n)
	}

	// Reopen: the back office says so.
	admin.navigate(s.url + "/admin") // signed in still (the tab's token)
	admin.waitJS(10*time.Second, "the queue's section", section+` !== null && !`+section+`.querySelector('.sale-reopen').hidden`)
	admin.do("reopen", chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-queue=%q] .sale-reopen`, s.queue))))
	admin.waitJS(5*time.Second, "the sale open again", section+`.querySelector('.closed-note').hidden && !`+section+`.querySelector('.sale-close-fields').hidden`)
}
