package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	cbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// alertsRecorder runs before the page's own scripts (the line's alerts,
// waiting-alerts.js). It records, in window.__alerts, the notifications
// the page constructs, its permission requests, the audio contexts it
// makes, the oscillators it starts and every title it shows, and lets the
// test hide the page: headless Chromium shows every page whatever the
// window or the tab in front (tried: a minimized window, another tab
// activated), so document.visibilityState and hidden are answered here
// and visibilitychange sent, as a browser does when a tab goes to the back.
const alertsRecorder = `(() => {
  const rec = { notifications: [], requests: 0, contexts: 0, oscillators: 0, titles: [], hidden: false };
  window.__alerts = rec;
  const Real = window.Notification;
  class Recorded extends Real {
    constructor(title, options) {
      rec.notifications.push({ title: String(title), body: String((options && options.body) || '') });
      super(title, options);
    }
  }
  Recorded.requestPermission = (...args) => { rec.requests++; return Real.requestPermission(...args); };
  Object.defineProperty(Recorded, 'permission', { get: () => Real.permission });
  window.Notification = Recorded;
  const RealAudio = window.AudioContext;
  window.AudioContext = class extends RealAudio {
    constructor(...args) { super(...args); rec.contexts++; }
  };
  const start = AudioScheduledSourceNode.prototype.start;
  AudioScheduledSourceNode.prototype.start = function (...args) {
    if (this instanceof OscillatorNode) rec.oscillators++;
    return start.apply(this, args);
  };
  Object.defineProperty(Document.prototype, 'visibilityState', { configurable: true, get: () => rec.hidden ? 'hidden' : 'visible' });
  Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => rec.hidden });
  rec.hide = (hidden) => { rec.hidden = hidden; document.dispatchEvent(new Event('visibilitychange')); };
  new MutationObserver(() => {
    if (rec.titles[rec.titles.length - 1] !== document.title) rec.titles.push(document.title);
  }).observe(document, { subtree: true, childList: true, characterData: true });
})()`

// recordAlerts installs alertsRecorder for every document the tab loads,
// and tells the page its window is in front (headless Chromium otherwise
// answers document.hasFocus() with false: someone looking away).
func (b *browser) recordAlerts() {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: alertsRecorder}); err != nil {
		b.t.Fatalf("add the alerts recorder: %v", err)
	}
	if _, err := chromedp.Call(b.ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		b.t.Fatalf("focus emulation: %v", err)
	}
}

// allowNotifications grants origin the notification permission, as a
// person answering the browser's prompt would (Browser.setPermission, the
// successor of Browser.grantPermissions): Notification.requestPermission
// then resolves "granted" without a prompt.
func (b *browser) allowNotifications(origin string) {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, cbrowser.SetPermission, cbrowser.SetPermissionParams{
		Permission: &cbrowser.PermissionDescriptor{Name: string(cbrowser.PermissionTypeNotifications)},
		Setting:    cbrowser.PermissionSettingGranted,
		Origin:     origin,
	}); err != nil {
		b.t.Fatalf("grant notifications: %v", err)
	}
}

type alertsSeen struct {
	Notifications []struct{ Title, Body string } `json:"notifications"`
	Requests      int                            `json:"requests"`
	Contexts      int                            `json:"contexts"`
	Oscillators   int                            `json:"oscillators"`
	Titles        []string                       `json:"titles"`
}

func (b *browser) alerts() alertsSeen {
	b.t.Helper()
	return eval[alertsSeen](b, `({notifications: __alerts.notifications, requests: __alerts.requests, contexts: __alerts.contexts, oscillators: __alerts.oscillators, titles: __alerts.titles})`)
}

// alertsLine is a paused line with two people ahead and the page waiting
// behind them, recording its alerts: the test decides when the line moves.
func alertsLine(t *testing.T, targetURL string) (*stack, *browser) {
	t.Helper()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1), targetURL: targetURL})
	on := true
	s.update(queue.Update{Paused: &on})
	s.fillWaiting("ahead", 2)
	b := newBrowser(t, chromium)
	b.recordAlerts()
	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	return s, b
}

func (s *stack) resume() {
	s.t.Helper()
	off := false
	s.update(queue.Update{Paused: &off})
}

// The turn comes while the tab is hidden: the title flashes, two tones
// play (the person clicked "Notify me", so the page may make sound) and the
// system notification shows with the turn panel's words. The permission
// was asked once, on the click, and not before it. Once the tab is shown
// again the title stops flashing.
func TestTurnToldWhileHidden(t *testing.T) {
	t.Parallel()
	s, b := alertsLine(t, "")

	if got := b.alerts(); got.Requests != 0 || got.Contexts != 0 {
		t.Fatalf("before any click: %d permission requests, %d audio contexts; want none", got.Requests, got.Contexts)
	}
	if eval[bool](b, `document.getElementById('notify-btn').hidden`) {
		t.Fatal(`"Notify me" is hidden while the browser may still ask`)
	}
	b.allowNotifications(s.url) // the answer the person will give to the prompt
	b.do(`click "Notify me"`, chromedp.Click(chromedp.CSS("#notify-btn")))
	b.waitJS(5*time.Second, "the note that a notification will come",
		`document.getElementById('notify-btn').hidden && !document.getElementById('notify-on').hidden`)
	if got := b.alerts(); got.Requests != 1 || got.Contexts != 1 {
		t.Fatalf("after the click: %d permission requests, %d audio contexts; want one each", got.Requests, got.Contexts)
	}
	if note := b.text("#notify-on"); note != "You'll get a notification when it's your turn." {
		t.Errorf("the note reads %q", note)
	}
	b.screenshot("notify-on")

	eval[bool](b, `(__alerts.hide(true), document.visibilityState === 'hidden')`)
	s.resume()
	b.waitJS(20*time.Second, "the turn", jsState("entered"))
	const turn, waiting = "It's your turn", "Waiting line"
	b.waitJS(5*time.Second, "the title to flash", fmt.Sprintf(
		`__alerts.titles.filter((x) => x === %q).length >= 2 && __alerts.titles.filter((x) => x === %q).length >= 2`, turn, waiting))
	got := b.alerts()
	if got.Oscillators < 1 {
		t.Errorf("no tone started at the turn (%d oscillators)", got.Oscillators)
	}
	want := "Your turn has started. Go back to the site you came from and reload the page."
	if len(got.Notifications) != 1 || got.Notifications[0].Title != turn || got.Notifications[0].Body != want {
		t.Errorf("notifications %+v, want one titled %q saying %q", got.Notifications, turn, want)
	}
	if got.Requests != 1 {
		t.Errorf("%d permission requests in all, want the click's one", got.Requests)
	}

	// Shown again: the flashing stops, on the page's own title.
	eval[bool](b, `(__alerts.hide(false), true)`)
	b.waitJS(5*time.Second, "the page's title", fmt.Sprintf(`document.title === %q`, waiting))
	n := len(b.alerts().Titles)
	time.Sleep(2500 * time.Millisecond) // a deliberate duration: two and a half flashes
	if after := b.alerts(); len(after.Titles) != n || len(after.Notifications) != 1 {
		t.Errorf("after the tab was shown the title changed %d more times (%v), notifications %d", len(after.Titles)-n, after.Titles[n-1:], len(after.Notifications))
	}
}

// The turn comes while the person looks at the page: nothing flashes,
// sounds or pops up, though the page could make sound (a click on it) and
// notify (the permission is granted); and without a click on "Notify me"
// the page never asks for the permission.
func TestTurnNotToldWhenLooking(t *testing.T) {
	t.Parallel()
	s, b := alertsLine(t, "")
	b.allowNotifications(s.url) // granted earlier, say: the page must still not notify
	b.do("click on the page (the language it is in)", chromedp.Click(chromedp.CSS("#lang-en")))
	b.waitJS(5*time.Second, "the audio context the click made", `__alerts.contexts === 1`)
	s.resume()
	b.waitJS(20*time.Second, "the turn", jsState("entered"))
	time.Sleep(2500 * time.Millisecond) // a deliberate duration: two and a half flashes, had there been any
	got := b.alerts()
	if len(got.Notifications) != 0 || got.Oscillators != 0 || got.Requests != 0 {
		t.Errorf("looking at the page: notifications %+v, %d tones, %d permission requests; want none", got.Notifications, got.Oscillators, got.Requests)
	}
	for _, title := range got.Titles {
		if title != "Waiting line" {
			t.Errorf("the title changed to %q (titles %v)", title, got.Titles)
		}
	}
}

// A turn that sends the person on to the site waits while the tab is
// hidden, so that they come back to the flashing turn, and goes once the
// tab is shown.
func TestTurnWaitsForHiddenPage(t *testing.T) {
	t.Parallel()
	order := newOrderPage(t)
	s, b := alertsLine(t, order.url)
	order.checkWith(s.url, s.queue)
	eval[bool](b, `(__alerts.hide(true), true)`)
	s.resume()
	b.waitJS(20*time.Second, "the turn", jsState("entered")+` && !document.getElementById('turn-link').hidden`)
	b.waitJS(5*time.Second, "the title to flash", `__alerts.titles.includes("It's your turn")`)
	if href := eval[string](b, `location.href`); !strings.Contains(href, "/q/"+s.queue) {
		t.Fatalf("the hidden page went to %s", href)
	}
	eval[bool](b, `(__alerts.hide(false), true)`)
	b.waitJS(30*time.Second, "the order page", `!!document.getElementById('order')`)
	if v := order.visits(); len(v) != 1 || v[0].verify.Status != 200 {
		t.Errorf("order page visits %+v, want one with a valid pass", v)
	}
}

// The wait as a range (waiting-format.js etaRange), in both languages:
// the low end rounded down and the high end up, so the range only widens
// and never reads backwards; "less than a minute" when the top is under
// one, "up to" when the low end is; half hours past two hours.
func TestWaitRangeText(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	base := serveModules(t)
	b := newBrowser(t, chromium)
	cases := []struct {
		low, high float64
		en, ko    string
	}{
		{0, 0, "less than a minute", "1분 미만"},
		{0, 59, "less than a minute", "1분 미만"},
		{30, 60, "up to 1 min", "최대 1분"},
		{50, 200, "up to 4 min", "최대 4분"},
		{60, 60, "about 1 min", "약 1분"},
		{720, 900, "about 12–15 min", "약 12~15분"},
		{665, 901.8, "about 11–16 min", "약 11~16분"},
		{700, 650, "about 10–11 min", "약 10~11분"}, // never backwards, should the ends cross
		{6000, 7200, "about 100–120 min", "약 100~120분"},
		{7000, 9000, "about 1.5–2.5 hr", "약 1.5~2.5시간"},
		{36000, 36000, "about 10 hr", "약 10시간"},
	}
	for _, lang := range []string{"en", "ko"} {
		b.navigate(base + "/")
		eval[bool](b, fmt.Sprintf(`(localStorage.setItem('waitroom:lang', %q), true)`, lang))
		b.navigate(base + "/")
		for _, c := range cases {
			want := c.en
			if lang == "ko" {
				want = c.ko
			}
			if got := importing[string](b, "waiting-format.js", fmt.Sprintf(`m.etaRange(%v, %v)`, c.low, c.high)); got != want {
				t.Errorf("%s: etaRange(%v, %v) = %q, want %q", lang, c.low, c.high, got, want)
			}
		}
	}
	// A ticket from a server without the range: its single estimate.
	if got := importing[string](b, "waiting-format.js", `m.waitText({eta_seconds: 600})`); got != "약 10분" {
		t.Errorf("waitText without a range = %q, want the single estimate", got)
	}
}
