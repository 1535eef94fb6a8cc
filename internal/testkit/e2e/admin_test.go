package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// The back office refuses a wrong token, signs in with the right one,
// changes the refill size, shows the change in the audit log and charts
// the ticks.
func TestAdmin(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	// Two rooms: the queue under test guards the site, a second one /b/.
	s := newStack(t, stackOptions{settings: fastTicks(2), twoRooms: true})
	b := newBrowser(t, chromium)
	s.fillWaiting("crowd", 40) // ticks admit people: the chart gets bars

	// The sign-in page's options are public: no credential, nothing to
	// count.
	adminOK := func() int {
		return s.calls.count(func(c call) bool {
			return strings.HasPrefix(c.path, "/admin/v1/") && c.path != "/admin/v1/signin-options" && c.status < 300
		})
	}
	b.navigate(s.url + "/admin")
	b.waitJS(5*time.Second, "the sign-in form", `document.body.dataset.state === 'signed-out' && !document.getElementById('login').hidden`)
	// Where the token is, for one who started with scripts/up.sh.
	if got := eval[string](b, `document.getElementById('token-where').innerText`); !strings.Contains(got, "in .waitroom/admin-token") || !strings.HasSuffix(got, "prints it: scripts/up.sh token") {
		t.Errorf("#token-where = %q, want where scripts/up.sh keeps the token and the command that prints it", got)
	}

	// Wrong token.
	b.do("sign in with a wrong token",
		chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"),
		chromedp.Click(chromedp.CSS("#login-btn")))
	b.waitJS(5*time.Second, "the sign-in error", `!document.getElementById('login-error').hidden`)
	if msg := b.text("#login-error"); !strings.Contains(msg, "not accepted") {
		t.Errorf("#login-error = %q", msg)
	}
	if st := eval[string](b, `document.body.dataset.state`); st != "signed-out" {
		t.Errorf("state %q after a wrong token, want signed-out", st)
	}
	if n := adminOK(); n != 0 {
		t.Errorf("%d successful admin API calls with a wrong token", n)
	}
	rejected := s.calls.count(func(c call) bool {
		return strings.HasPrefix(c.path, "/admin/v1/") && c.status == http.StatusUnauthorized
	})
	// Two: the page's first look for a session cookie (GET /admin/v1/me
	// without one, which the lockout does not count), then the wrong token.
	if rejected != 2 {
		t.Errorf("%d admin API calls answered 401, want 2", rejected)
	}
	if stored := eval[bool](b, `sessionStorage.getItem('waitroom:admin-token') === null`); !stored {
		t.Error("a rejected token was kept in sessionStorage")
	}
	b.screenshot("login-error")

	// Right token.
	section := fmt.Sprintf(`[data-queue=%q]`, s.queue)
	b.do("sign in",
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS("#login-btn")))
	b.waitJS(5*time.Second, "the dashboard", fmt.Sprintf(
		`document.body.dataset.state === 'signed-in' && document.querySelector(%q) !== null`, section))
	if n := adminOK(); n == 0 {
		t.Error("signed in without a successful admin API call")
	}
	if href := eval[string](b, `location.href`); strings.Contains(href, adminToken) {
		t.Errorf("the token is in the URL: %s", href)
	}
	if got := b.text(section + " .refill-size"); got != "2" {
		t.Errorf(".refill-size = %q, want 2", got)
	}
	// The gate's routes to each queue: the second room's /b/, and the
	// first's "/", every other path.
	b.waitJS(5*time.Second, "the second room", fmt.Sprintf(`document.querySelector('[data-queue=%q]') !== null`, s.queueB))
	for q, want := range map[string]string{s.queue: "/", s.queueB: "/b/"} {
		if got := b.text(fmt.Sprintf(`[data-queue=%q] .routes`, q)); got != want {
			t.Errorf("%s: .routes = %q, want the gate's route %q", q, got, want)
		}
	}

	// Change the refill size like an operator: clear the field, type, save.
	input := section + " [data-setting=refill_size] .setting-input"
	b.do("type a new refill size",
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
			`(() => { const el = document.querySelector(%q); el.focus(); el.value = ''; el.dispatchEvent(new Event('input', {bubbles: true})); })()`, input)),
		chromedp.SendKeys(chromedp.CSS(input), "7"),
		chromedp.Click(chromedp.CSS(section+" [data-setting=refill_size] .setting-submit")))
	b.waitJS(5*time.Second, "the saved message", fmt.Sprintf(
		`!document.querySelector(%q).hidden && document.querySelector(%q).textContent === '7'`,
		section+" [data-setting=refill_size] .setting-ok", section+" .refill-size"))
	wait.For(t, 30*time.Second, "refill size 7 in the store", func() (bool, string) {
		info, err := s.store.Info(context.Background(), s.queue)
		if err != nil {
			return false, err.Error()
		}
		return info.Settings.RefillSize == 7, fmt.Sprint(info.Settings.RefillSize)
	})
	// More people for the new size: on a loaded machine the page can
	// take longer to save it than the ticks of 2 take to empty the line.
	s.fillWaiting("later", 14)
	if e := eval[bool](b, fmt.Sprintf(`document.querySelector(%q).hidden`, section+" [data-setting=refill_size] .setting-error")); !e {
		t.Errorf("refill_size's error shown: %q", b.text(section+" [data-setting=refill_size] .setting-error"))
	}

	// The change is in the queue's audit log, shown under the chart: who
	// (the address), what, old -> new; the token is nowhere on the page.
	b.waitJS(10*time.Second, "the change in the audit log", fmt.Sprintf(
		`document.querySelectorAll(%q).length === 1 && document.querySelector(%q).hidden`,
		section+" .audit-list .audit-entry", section+" .audit-empty"))
	entry := b.text(section + " .audit-list .audit-entry")
	for _, want := range []string{"Settings changed", "from 127.0.0.1", "refill_size: 2 → 7"} {
		if !strings.Contains(entry, want) {
			t.Errorf("audit entry %q, want it to say %q", entry, want)
		}
	}
	if page := eval[string](b, `document.body.innerText`); strings.Contains(page, adminToken) {
		t.Error("the admin token is shown on the page")
	}

	// The chart: a waiting line and admitted bars, drawn from the history
	// of the ticks; a tick admitting 7 shows the new size took effect.
	wait.For(t, 30*time.Second, "a tick admitting 7", func() (bool, string) {
		points, err := queue.NewInspector(s.store).History(context.Background(), s.queue)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range points {
			if p.Admitted == 7 {
				return true, ""
			}
		}
		return false, fmt.Sprint(points)
	})
	b.waitJS(10*time.Second, "the chart", fmt.Sprintf(
		`document.querySelector(%q) !== null && document.querySelectorAll(%q).length >= 2`,
		section+" svg.chart-waiting path.waiting-line", section+" svg.chart-ticks rect.admitted-bar"))

	// Admissions have a panel and a scale of their own: beside a line of
	// 40 waiting, ticks of 2 and 7 are bars of a good height, every bar at
	// least 2px, and none is drawn in the waiting panel.
	if n := eval[int](b, fmt.Sprintf(`document.querySelectorAll(%q).length`, section+" svg.chart-waiting rect, "+section+" svg.chart-active rect")); n != 0 {
		t.Errorf("%d bars outside the admissions panel", n)
	}
	bars := eval[[]float64](b, fmt.Sprintf(`Array.from(document.querySelectorAll(%q), (r) => r.getBoundingClientRect().height)`,
		section+" svg.chart-ticks rect.admitted-bar"))
	tallest := 0.0
	for _, h := range bars {
		if h < 2 {
			t.Errorf("an admitted bar %.1fpx high; want at least 2px", h)
		}
		tallest = max(tallest, h)
	}
	if tallest < 24 { // the panel's plot is 72px; its scale tops the largest tick by less than 2.5×
		t.Errorf("the tallest admitted bar is %.1fpx high; want it at its own panel's scale (at least 24px)", tallest)
	}

	// Active users: sampled by the page at each refresh, a line once there
	// are two samples, and the latest value beside the panel's name.
	b.waitJS(10*time.Second, "the active users' line and value", fmt.Sprintf(
		`(document.querySelector(%q) || {getAttribute: () => ''}).getAttribute('d').includes('L') && %s === '· ' + %s.split(' ')[0] + ' now'`,
		section+" svg.chart-active path.active-line", jsText(section+" .now-active"), jsText(section+" .active")))
	if got := b.text(section + " .now-waiting"); !strings.HasPrefix(got, "· ") || !strings.HasSuffix(got, " now") {
		t.Errorf(".now-waiting = %q, want '· N now'", got)
	}

	// The admitted panel's keys read "■ Abandoned  ┄ Refill in force":
	// each swatch before its word, a gap between the keys.
	b.waitJS(10*time.Second, "the refill in force's key", fmt.Sprintf(`!document.querySelector(%q).hidden`, section+" .effective-key"))
	keys := eval[string](b, fmt.Sprintf(`(() => {
	  const k = document.querySelector(%q), sw = k.querySelector('.swatch'), word = k.querySelector('[data-i18n]');
	  const before = [...k.parentElement.children].filter((e) => e !== k && !e.hidden && e.getClientRects().length &&
	    (k.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_PRECEDING)).pop();
	  const r = (e) => e.getBoundingClientRect();
	  const problems = [];
	  if (getComputedStyle(sw).borderTopStyle !== 'dashed' || r(sw).width < 8) problems.push('no dashed swatch');
	  if (r(sw).right > r(word).left) problems.push('swatch after its word');
	  if (r(k).left - r(before).right < 4) problems.push('no gap after ' + before.className);
	  return problems.join(', ');
	})()`, section+" .effective-key"))
	if keys != "" {
		t.Errorf("the chart's keys: %s", keys)
	}

	// The labels are 12px whatever the chart's width: on this 1000px
	// window and on a phone.
	b.waitJS(5*time.Second, "the chart's labels at their size on a desktop", chartLabelsOK(section))
	b.screenshot("dashboard")
	b.do("a phone's viewport", chromedp.EmulateViewport(390, 844))
	b.waitJS(5*time.Second, "the chart's labels at their size on a phone", chartLabelsOK(section)+
		` && document.documentElement.scrollWidth <= 390`)
	b.screenshot("dashboard-phone") // ends the phone's viewport

	b.do("sign out", chromedp.Click(chromedp.CSS("#signout")))
	b.waitJS(5*time.Second, "the sign-in form after signing out",
		`document.body.dataset.state === 'signed-out' && sessionStorage.getItem('waitroom:admin-token') === null`)
}

// chartLabelsOK is a JavaScript condition: section's charts are drawn one
// unit to one CSS pixel (an SVG scaled to its box would scale its text
// too), and every label is a 12px font about a line of 12px text high.
func chartLabelsOK(section string) string {
	return fmt.Sprintf(`(() => {
	  const svgs = Array.from(document.querySelectorAll(%q));
	  const labels = Array.from(document.querySelectorAll(%q));
	  return svgs.length === 3 && labels.length > 0 &&
	    svgs.every((svg) => Math.abs(svg.getScreenCTM().a - 1) < 0.02) &&
	    labels.every((t) => getComputedStyle(t).fontSize === '12px' &&
	      t.getBoundingClientRect().height >= 10 && t.getBoundingClientRect().height <= 18);
	})()`, section+" svg.chart", section+" svg.chart text.chart-label")
}

// A browser that asks for Korean gets the back office in Korean, from the
// sign-in (with where scripts/up.sh keeps the token) to the dashboard, its
// settings' messages and its audit log: no English is left on the page
// but names that are not words to translate.
func TestAdminInKorean(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(2)})
	b := newBrowserIn(t, chromium, "ko-KR")
	s.fillWaiting("crowd", 5)

	// englishLeft is the page's visible words of Latin letters, but for
	// what is the same in every language: the product, the language
	// switch, the token's variable, prefix, file and command, UTC, API,
	// the queue's name, the settings' API names and the lanes hint's
	// example names (lane names are API names, [a-z0-9-]).
	englishLeft := func() []string {
		return eval[[]string](b, fmt.Sprintf(`(() => {
		  const names = new Set(['waitroom', 'English', 'WAITROOM_ADMIN_TOKEN', 'wrt_', 'scripts', 'up', 'sh', 'token', 'admin', 'UTC', 'API', 'refill_size', 'priority', 'seniors']);
		  const queue = new Set(%q.split(/[^A-Za-z]+/));
		  // The switch names each language in its own words, as do the
		  // queue text form's boxes and the sold-out message's fields,
		  // one per language.
		  let text = document.body.innerText.replace(document.querySelector('.lang-switch').innerText, '');
		  document.querySelectorAll('.text-lang-name, .sale-lang-name').forEach((el) => { text = text.replace(el.innerText, ''); });
		  // A setting's label or hint not translated yet shows the
		  // catalog's English, marked so (internal/web/httpapi's
		  // TestSettingWordsTranslated lists them).
		  document.querySelectorAll('.setting-form [lang="en"]').forEach((el) => { text = text.replace(el.innerText, ''); });
		  return (text.match(/[A-Za-z_]{2,}/g) || []).filter((w) => !names.has(w) && !queue.has(w));
		})()`, s.queue))
	}

	b.navigate(s.url + "/admin")
	// The catalog is fetched (i18n/admin/ko.json): the language comes
	// with it.
	b.waitJS(5*time.Second, "the sign-in form in a language", `document.body.dataset.state === 'signed-out' && !document.getElementById('login').hidden && document.title !== 'waitroom · back office'`)
	if lang := eval[string](b, `document.documentElement.lang`); lang != "ko" {
		t.Errorf("<html lang=%q>, want ko", lang)
	}
	if got := b.text("#login-title"); got != "로그인" {
		t.Errorf("#login-title = %q, want 로그인", got)
	}
	if got := b.text("#token-where"); !strings.Contains(got, ".waitroom/admin-token") || !strings.Contains(got, "scripts/up.sh token") {
		t.Errorf("#token-where = %q, want where scripts/up.sh keeps the token and the command that prints it", got)
	}
	if left := englishLeft(); len(left) != 0 {
		t.Errorf("English on the Korean sign-in: %q", left)
	}
	b.screenshot("login-korean")

	section := signInAdmin(b, s)
	if got := b.text("#dash-title"); got != "대기열" {
		t.Errorf("#dash-title = %q, want 대기열", got)
	}
	if got := b.text(section + " .queue-state"); got != "입장 중" {
		t.Errorf(".queue-state = %q, want 입장 중", got)
	}
	saveSetting(b, section+" [data-setting=refill_size] .setting-input", section+" [data-setting=refill_size] .setting-submit", "3")
	b.waitJS(5*time.Second, "the saved message and the audit entry", fmt.Sprintf(`%s && document.querySelectorAll(%q).length === 1`,
		jsShown(section+" [data-setting=refill_size] .setting-ok"), section+" .audit-list .audit-entry"))
	if got := b.text(section + " [data-setting=refill_size] .setting-ok"); got != "저장했습니다: 다음 회차부터 회차당 3명." {
		t.Errorf("refill_size's .setting-ok = %q", got)
	}
	if got := b.text(section + " .audit-entry"); !strings.Contains(got, "설정 변경") || !strings.Contains(got, "127.0.0.1에서") {
		t.Errorf("audit entry %q, want it in Korean", got)
	}
	b.waitJS(10*time.Second, "the chart", fmt.Sprintf(`document.querySelectorAll(%q).length > 0`, section+" svg.chart-ticks rect.admitted-bar"))
	if left := englishLeft(); len(left) != 0 {
		t.Errorf("English on the Korean dashboard: %q", left)
	}
	b.screenshot("dashboard-korean")

	// The switch brings English back, and the page keeps the choice.
	b.do("switch to English", chromedp.Click(chromedp.CSS("#lang-en")))
	b.waitJS(5*time.Second, "English", fmt.Sprintf(`document.documentElement.lang === 'en' && %s === 'Queues' && %s === 'Admitting'`,
		jsText("#dash-title"), jsText(section+" .queue-state")))
	if got := b.text(section + " .audit-entry"); !strings.Contains(got, "Settings changed") {
		t.Errorf("audit entry after switching to English: %q", got)
	}
	b.navigate(s.url + "/admin")
	b.waitJS(5*time.Second, "the dashboard in English after a reload", fmt.Sprintf(
		`document.body.dataset.state === 'signed-in' && document.documentElement.lang === 'en' && %s === 'Queues'`, jsText("#dash-title")))
}
