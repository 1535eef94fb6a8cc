package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/envconfig"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// The outage page's words (web/static/i18n/waiting/{ko,en}.json).
const (
	outageTitleKo = "대기열을 잠시 이용할 수 없습니다"
	outageTitleEn = "The waiting room is briefly unavailable"
)

// pauseRedis pauses ctr until the test unpauses it (the returned func) or
// ends.
func pauseRedis(t *testing.T, ctr *redistest.Container) (unpause func()) {
	t.Helper()
	if err := ctr.Pause(context.Background()); err != nil {
		t.Fatal(err)
	}
	paused := true
	t.Cleanup(func() {
		if paused {
			_ = ctr.Unpause(context.Background())
		}
	})
	return func() {
		t.Helper()
		if err := ctr.Unpause(context.Background()); err != nil {
			t.Fatal(err)
		}
		paused = false
	}
}

// statusOf is the status a browser-like GET of url gets, following no
// redirect.
func statusOf(t *testing.T, url string, header ...string) int {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{Timeout: 15 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// checkOutagePage checks that b shows the outage page in lang, titled
// title, its countdown in lang's words, with says in its message.
func checkOutagePage(b *browser, lang, title, says, countdown string) {
	b.t.Helper()
	b.waitJS(20*time.Second, "the outage page", jsState("unavailable"))
	if got := eval[string](b, `document.documentElement.lang`); got != lang {
		b.fail("page language %q, want %q", got, lang)
	}
	if got := b.text("#wr-title"); got != title {
		b.fail("title %q, want %q", got, title)
	}
	if got := b.text("#wr-body"); !strings.Contains(got, says) {
		b.fail("message %q, want it to say %q", got, says)
	}
	// Styled: its own style sheet applied (the CSP let it in).
	if bg := eval[string](b, `getComputedStyle(document.querySelector('.card')).borderRadius`); bg != "14px" {
		b.fail("the card's border radius is %q: the page's style did not apply", bg)
	}
	b.waitJS(10*time.Second, "the countdown", fmt.Sprintf(`/%s/.test(document.getElementById('wr-retry').textContent)`, countdown))
}

// The waiting page opened while Redis is paused: the page that says so, in
// Korean for a browser asking for Korean and in English for one asking
// for English, styled, counting down to its next try; its first try finds
// the room still away and it waits longer; once Redis is back a later try
// succeeds and the page goes on into the line.
func TestOutageWaitingPage(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	ctr := redistest.NewContainer(t)
	opts := envconfig.SingleRedis(t, envconfig.Load(t, nil))
	s := newStack(t, stackOptions{
		settings: queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Minute},
		redis:    ctr.Client(t, opts),
	})
	s.fillWaiting("ahead", 3)
	page := s.url + "/q/" + s.queue
	ko := newBrowserIn(t, chromium, "ko-KR")
	en := newBrowserIn(t, chromium, "en-US")

	unpause := pauseRedis(t, ctr)
	// The queue's text is kept a second (queue.TextCacheTTL).
	wait.For(t, 30*time.Second, "the waiting page to answer 503", func() (bool, string) {
		st := statusOf(t, page)
		return st == http.StatusServiceUnavailable, fmt.Sprint(st)
	})
	ko.navigate(page)
	en.navigate(page)
	checkOutagePage(ko, "ko", outageTitleKo, "대기열이 복구되면", `^\d+초 후 다시 시도합니다$`)
	ko.screenshot("unavailable-ko")
	checkOutagePage(en, "en", outageTitleEn, "You can join the line as soon as it is back", `^Trying again in \d+ s$`)
	en.screenshot("unavailable-en")

	// The first try (after 4-6 s) finds Redis still away: the page waits
	// again, longer, and says so.
	ko.waitJS(30*time.Second, "a second wait", `Number(document.body.dataset.tries) >= 2`)
	if n := s.calls.count(func(c call) bool { return c.method == "HEAD" && c.status == http.StatusServiceUnavailable }); n == 0 {
		t.Error("no try of the page was answered 503")
	}
	ko.screenshot("unavailable-ko-retrying")

	unpause()
	for _, b := range []*browser{ko, en} {
		b.waitJS(60*time.Second, "the page to go on into the line",
			`document.body.classList.contains('page-waiting') && ['waiting', 'entered'].includes(document.body.dataset.state)`)
	}
	if got := eval[string](ko, `document.documentElement.lang`); got != "ko" {
		t.Errorf("the waiting page after the outage is in %q, want ko", got)
	}
	ko.screenshot("back-in-line-ko")
	if enters := s.enterRequests(); enters != 2 {
		t.Errorf("%d enter requests, want 2 (one per browser)", enters)
	}
}

// The gate in front of the order page, closed, with Redis paused: a
// browser without a pass gets the gate's page that says so, in its
// language, styled, retrying by itself; once Redis is back it goes on to
// the waiting page, through the line and into the order page.
func TestOutageGatePage(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	ctr := redistest.NewContainer(t)
	order := orderSite(t)
	fs := newFailStack(t, ctr, gate.FailClosed, order, "", false)
	ko := newBrowserIn(t, chromium, "ko-KR")
	en := newBrowserIn(t, chromium, "en-US")

	unpause := pauseRedis(t, ctr)
	wait.For(t, 30*time.Second, "the gate to see Redis away", func() (bool, string) {
		st := statusOf(t, fs.url+"/order")
		return st == http.StatusServiceUnavailable, fmt.Sprint(st)
	})
	ko.navigate(fs.url + "/order")
	en.navigate(fs.url + "/order")
	checkOutagePage(ko, "ko", outageTitleKo, "입장권을 확인할 수 없습니다", `^\d+초 후 다시 시도합니다$`)
	ko.screenshot("gate-unavailable-ko")
	checkOutagePage(en, "en", outageTitleEn, "Entry passes cannot be checked right now", `^Trying again in \d+ s$`)
	en.screenshot("gate-unavailable-en")
	ko.waitJS(30*time.Second, "a second wait", `Number(document.body.dataset.tries) >= 2`)

	unpause()
	for _, b := range []*browser{ko, en} {
		b.waitJS(60*time.Second, "the order page, through the line",
			`location.pathname === '/order' && document.body.innerText.startsWith('order:')`)
	}
	ko.screenshot("gate-back-order")
}
