package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// signInAdmin opens the back office in b, signs in and waits for the
// stack's queue; it returns the CSS selector of the queue's section.
func signInAdmin(b *browser, s *stack) string {
	b.t.Helper()
	section := fmt.Sprintf(`[data-queue=%q]`, s.queue)
	b.navigate(s.url + "/admin")
	b.waitJS(5*time.Second, "the sign-in form", `document.body.dataset.state === 'signed-out' && !document.getElementById('login').hidden`)
	b.do("sign in",
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS("#login-btn")))
	b.waitJS(5*time.Second, "the dashboard", fmt.Sprintf(
		`document.body.dataset.state === 'signed-in' && document.querySelector(%q) !== null`, section))
	return section
}

// saveSetting types value into a setting's field as an operator does
// (clear, type) and presses its Save.
func saveSetting(b *browser, input, submit, value string) {
	b.t.Helper()
	b.do("type "+value+" into "+input,
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
			`(() => { const el = document.querySelector(%q); el.focus(); el.value = ''; el.dispatchEvent(new Event('input', {bubbles: true})); })()`, input)),
		chromedp.SendKeys(chromedp.CSS(input), value),
		chromedp.Click(chromedp.CSS(submit)))
}

// jsText is a JavaScript expression for the trimmed text of the first
// element matching css (” when there is none).
func jsText(css string) string {
	return fmt.Sprintf(`((document.querySelector(%q) || {}).textContent || '').trim()`, css)
}

// jsShown is a JavaScript condition: the first element matching css is
// there and not hidden.
func jsShown(css string) string {
	return fmt.Sprintf(`(document.querySelector(%q) || {hidden: true}).hidden === false`, css)
}

func (s *stack) info() queue.Info {
	s.t.Helper()
	info, err := s.store.Info(context.Background(), s.queue)
	if err != nil {
		s.t.Fatal(err)
	}
	return info
}

// ticksAfter counts the ticks applied after since (the history has one
// point per applied tick, paused or not).
func (s *stack) ticksAfter(since time.Time) int {
	s.t.Helper()
	points, err := queue.NewInspector(s.store).History(context.Background(), s.queue)
	if err != nil {
		s.t.Fatal(err)
	}
	n := 0
	for _, p := range points {
		if p.At.After(since) {
			n++
		}
	}
	return n
}

// The operator pauses the queue in the back office while a user waits:
// the waiting page says the line is paused, promises no wait time, keeps
// polling and keeps the user's place while ticks pass. After the operator
// resumes, the user moves up and is admitted.
func TestPauseKeepsPlaces(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	// A tick every 2 s: the nine ahead last 18 s, longer than the admin's
	// sign-in and the page's join take on a loaded machine (at one a
	// second the page, joining late, was admitted at once).
	settings := fastTicks(1)
	settings.RefillInterval = 2 * time.Second
	s := newStack(t, stackOptions{settings: settings})
	admin := newBrowser(t, chromium)
	user := newBrowser(t, chromium)
	// Nine ahead: the user's place is within the ten nearest the head,
	// whose position is exact (behind them it is "about N", from a
	// replica's snapshot). With ten, a user who joined before the first
	// tick was 11th.
	s.fillWaiting("ahead", 9)

	section := signInAdmin(admin, s)
	state, pauseBtn, note := section+" .queue-state", section+" .pause-btn", section+" .paused-note"
	if got := admin.text(state); got != "Admitting" {
		t.Errorf("%s = %q before the pause, want Admitting", state, got)
	}
	if got := admin.text(pauseBtn); got != "Pause admissions" {
		t.Errorf("%s = %q, want Pause admissions", pauseBtn, got)
	}

	user.navigate(s.url + "/q/" + s.queue)
	user.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	member := s.member(user)
	if eta := user.text("#eta"); eta == "" || eta == "–" || eta == "Paused" {
		t.Errorf("#eta = %q before the pause, want an estimate", eta)
	}
	if shown := eval[bool](user, jsShown("#paused")); shown {
		t.Error("the paused message shows before the pause")
	}

	// The operator pauses.
	admin.do("pause", chromedp.Click(chromedp.CSS(pauseBtn)))
	admin.waitJS(5*time.Second, "the paused badge", fmt.Sprintf(`%s === 'Paused' && %s === 'Resume admissions' && %s`,
		jsText(state), jsText(pauseBtn), jsShown(note)))
	info := s.info()
	if !info.Paused {
		t.Fatal("the store is not paused after the operator paused the queue")
	}
	// The PATCH has been applied: from here on nobody moves.
	frozen := s.status(member)
	if frozen.Status != queue.Waiting || !frozen.Paused {
		t.Fatalf("store ticket after the pause: %+v, want WAITING and paused", frozen)
	}

	user.waitJS(10*time.Second, "the paused message", jsShown("#paused")+` && `+jsState("waiting"))
	if msg := user.text("#paused-text"); msg != "The line is paused. You keep your place, and it will move again when the line resumes." {
		t.Errorf("#paused-text = %q", msg)
	}
	checkPausedPage := func(when string) {
		t.Helper()
		if eta := user.text("#eta"); eta != "Paused" {
			t.Errorf("%s: #eta = %q, want Paused instead of an estimate", when, eta)
		}
		st := user.text("#status-text")
		if !strings.HasSuffix(st, "; the line is paused") || strings.Contains(st, "estimated wait") || strings.Contains(st, "minute") {
			t.Errorf("%s: #status-text = %q, want the line summary ending in '; the line is paused' and no wait time", when, st)
		}
		if p := user.number("#position"); p != frozen.Position {
			t.Errorf("%s: page position %d, the store's %d", when, p, frozen.Position)
		}
		if ahead := user.number("#ahead"); ahead != frozen.Position-1 {
			t.Errorf("%s: #ahead = %d, want %d", when, ahead, frozen.Position-1)
		}
	}
	checkPausedPage("paused")
	user.screenshot("paused")
	admin.screenshot("admin-paused")

	// Ticks pass and move nobody; the page keeps asking.
	updated := eval[string](user, `document.getElementById('updated').getAttribute('datetime')`)
	polls := s.statusCalls(member)
	wait.For(t, 30*time.Second, "three ticks and two polls while paused", func() (bool, string) {
		n, p := s.ticksAfter(info.LastTickAt), s.statusCalls(member)-polls
		return n >= 3 && p >= 2, fmt.Sprintf("%d ticks, %d polls", n, p)
	})
	if tk := s.status(member); tk.Status != queue.Waiting || tk.Position != frozen.Position {
		t.Errorf("store ticket after ticks while paused: %+v, want WAITING at %d", tk, frozen.Position)
	}
	if now := s.info(); now.Waiting != info.Waiting || now.Entered != info.Entered {
		t.Errorf("while paused the store went from %d waiting, %d entered to %d, %d", info.Waiting, info.Entered, now.Waiting, now.Entered)
	}
	// The page shows an answer from after the first paused one.
	user.waitJS(5*time.Second, "the page to show a later poll", fmt.Sprintf(
		`document.getElementById('updated').getAttribute('datetime') !== %q`, updated))
	checkPausedPage("after ticks")
	if enters := s.enterRequests(); enters != 1 {
		t.Errorf("%d enter requests while paused, want 1", enters)
	}

	// In Korean too.
	user.do("switch to Korean", chromedp.Click(chromedp.CSS("#lang-ko")))
	user.waitJS(5*time.Second, "Korean", `document.documentElement.lang === 'ko'`)
	if msg := user.text("#paused-text"); !strings.HasPrefix(msg, "대기열이 잠시 멈췄습니다.") {
		t.Errorf("#paused-text in Korean = %q", msg)
	}
	if eta := user.text("#eta"); eta != "일시 정지" {
		t.Errorf("#eta in Korean = %q, want 일시 정지", eta)
	}
	if st := user.text("#status-text"); !strings.HasSuffix(st, "대기열 일시 정지 중") || strings.Contains(st, "분") {
		t.Errorf("#status-text in Korean = %q, want the paused summary and no minutes", st)
	}
	user.screenshot("paused-korean")
	user.do("switch to English", chromedp.Click(chromedp.CSS("#lang-en")))
	user.waitJS(5*time.Second, "English", `document.documentElement.lang === 'en'`)

	// The operator resumes: the line moves again.
	admin.do("resume", chromedp.Click(chromedp.CSS(pauseBtn)))
	admin.waitJS(5*time.Second, "the admitting badge", fmt.Sprintf(`%s === 'Admitting' && %s === 'Pause admissions' && !%s`,
		jsText(state), jsText(pauseBtn), jsShown(note)))
	if s.info().Paused {
		t.Fatal("the store is still paused after the operator resumed")
	}
	user.waitJS(10*time.Second, "the position to drop after resuming", fmt.Sprintf(
		`(%s && !%s && Number(document.getElementById('position').textContent.replace(/,/g, '')) < %d) || %s`,
		jsState("waiting"), jsShown("#paused"), frozen.Position, jsState("entered")))
	if eval[string](user, `document.body.dataset.state`) == "waiting" {
		if eta := user.text("#eta"); eta == "" || eta == "–" || eta == "Paused" {
			t.Errorf("#eta = %q after resuming, want an estimate", eta)
		}
		if st, eta := summaryAndEta(user); !strings.HasSuffix(st, "; estimated wait "+eta) {
			t.Errorf("#status-text = %q after resuming, want the wait time back, as the card says it (%q)", st, eta)
		}
		user.screenshot("resumed")
	}
	user.waitJS(30*time.Second, "the turn", jsState("entered")+` && !document.getElementById('turn').hidden`)
	if tk := s.status(member); tk.Status != queue.Entered {
		t.Errorf("store status %s after the turn, want ENTERED", tk.Status)
	}
	if enters := s.enterRequests(); enters != 1 {
		t.Errorf("%d enter requests, want 1", enters)
	}
	patches := s.calls.count(func(c call) bool {
		return c.method == http.MethodPatch && c.status == http.StatusOK
	})
	if patches != 2 {
		t.Errorf("%d successful PATCH requests, want 2 (pause, resume)", patches)
	}
}

// The operator caps the active users in the back office: the view and the
// store show the cap and the ticks stop admitting once it is reached. An
// invalid cap shows the server's message under the field and changes
// nothing; 0 lifts the cap.
func TestAdminMaxActive(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1)})
	b := newBrowser(t, chromium)
	s.fillWaiting("crowd", 30)

	section := signInAdmin(b, s)
	active, input, submit := section+" .active", section+" [data-setting=max_active] .setting-input", section+" [data-setting=max_active] .setting-submit"
	capOK, capErr := section+" [data-setting=max_active] .setting-ok", section+" [data-setting=max_active] .setting-error"
	if got := b.text(active); !strings.HasSuffix(got, " (no cap)") {
		t.Errorf("%s = %q, want N (no cap)", active, got)
	}
	if got := eval[string](b, fmt.Sprintf(`document.querySelector(%q).value`, input)); got != "0" {
		t.Errorf("cap field %q, want 0", got)
	}

	// A cap a few ticks above the users admitted so far (one per second).
	limit := s.info().Entered + 3
	saveSetting(b, input, submit, strconv.FormatInt(limit, 10))
	b.waitJS(5*time.Second, "the saved cap", fmt.Sprintf(`%s && %s.includes(%q)`,
		jsShown(capOK), jsText(active), " / "+strconv.FormatInt(limit, 10)))
	if msg := b.text(capOK); msg != fmt.Sprintf("Saved: at most %d active users at a time.", limit) {
		t.Errorf("%s = %q", capOK, msg)
	}
	if got := s.info().Settings.MaxActive; got != int(limit) {
		t.Fatalf("store max_active %d after saving %d", got, limit)
	}

	// The ticks fill the room the cap leaves and then admit nobody.
	full := fmt.Sprintf("%d / %d (full)", limit, limit)
	b.waitJS(15*time.Second, "the queue to be full", fmt.Sprintf(`%s === %q`, jsText(active), full))
	atCap := s.info()
	if atCap.Entered != limit {
		t.Fatalf("store: %d active at the cap of %d", atCap.Entered, limit)
	}
	wait.For(t, 30*time.Second, "two ticks at the cap", func() (bool, string) {
		n := s.ticksAfter(atCap.LastTickAt)
		return n >= 2, fmt.Sprintf("%d ticks", n)
	})
	if now := s.info(); now.Entered != limit || now.Waiting != atCap.Waiting {
		t.Errorf("at the cap the store went from %d active, %d waiting to %d, %d",
			atCap.Entered, atCap.Waiting, now.Entered, now.Waiting)
	}
	b.screenshot("cap-full")

	// An invalid cap: the server's message under the field, nothing changed.
	saveSetting(b, input, submit, "-1")
	b.waitJS(5*time.Second, "the server's error", jsShown(capErr))
	if msg := b.text(capErr); msg != "max_active must be an integer from 0 to 10000000 (invalid_settings)" {
		t.Errorf("%s = %q, want the server's invalid_settings message", capErr, msg)
	}
	if inv := eval[string](b, fmt.Sprintf(`document.querySelector(%q).getAttribute('aria-invalid')`, input)); inv != "true" {
		t.Errorf("cap field aria-invalid = %q, want true", inv)
	}
	if shown := eval[bool](b, jsShown(capOK)); shown {
		t.Error("the saved message still shows after an error")
	}
	refused := s.calls.count(func(c call) bool {
		return c.method == http.MethodPatch && c.status == http.StatusBadRequest
	})
	if refused != 1 {
		t.Errorf("%d PATCH requests answered 400, want 1: the server must have judged -1", refused)
	}
	if got := s.info().Settings.MaxActive; got != int(limit) {
		t.Errorf("store max_active %d after the invalid -1, want %d", got, limit)
	}
	// A refresh after the error still shows the cap, and keeps what the
	// operator typed for them to correct.
	refreshes := s.calls.count(func(c call) bool { return c.method == http.MethodGet && c.path == "/admin/v1/queues" })
	wait.For(t, 30*time.Second, "a refresh of the back office", func() (bool, string) {
		n := s.calls.count(func(c call) bool { return c.method == http.MethodGet && c.path == "/admin/v1/queues" })
		return n > refreshes, fmt.Sprint(n)
	})
	b.waitJS(5*time.Second, "the cap after the refresh", fmt.Sprintf(`%s === %q`, jsText(active), full))
	if got := eval[string](b, fmt.Sprintf(`document.querySelector(%q).value`, input)); got != "-1" {
		t.Errorf("cap field %q after a refresh, want the -1 the operator typed", got)
	}
	b.screenshot("cap-error")

	// 0 lifts the cap: the ticks admit again.
	saveSetting(b, input, submit, "0")
	b.waitJS(5*time.Second, "no cap", fmt.Sprintf(`%s && !%s && %s.endsWith(' (no cap)')`, jsShown(capOK), jsShown(capErr), jsText(active)))
	if msg := b.text(capOK); msg != "Saved: no cap on active users." {
		t.Errorf("%s = %q", capOK, msg)
	}
	if got := s.info().Settings.MaxActive; got != 0 {
		t.Errorf("store max_active %d after saving 0", got)
	}
	wait.For(t, 30*time.Second, "admissions above the old cap", func() (bool, string) {
		n := s.info().Entered
		return n > limit, fmt.Sprint(n)
	})
	b.waitJS(5*time.Second, "the new active count", fmt.Sprintf(`%s !== %q && %s.endsWith(' (no cap)')`,
		jsText(active), fmt.Sprintf("%d (no cap)", limit), jsText(active)))
	b.screenshot("no-cap")
}

// The operator sets how long a waiting place may go unheard, in seconds:
// the store gets milliseconds, the chart shows the places dropped, and an
// invalid value shows the server's message under the field. The operator,
// in Seoul (nine hours from UTC), schedules an opening with two times typed
// in UTC: the store gets those instants, the page says them in UTC and in
// Seoul time, and after a reload the form shows what was typed. A date
// without a time is caught before any request; the operator sees the
// server's refusal of a pre-queue after the opening under that field,
// clears it, and after a real draw reads its time, seed and participants.
func TestAdminAbandonAndOpening(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	settings := fastTicks(1)
	settings.AbandonAfter = 2 * time.Minute
	s := newStack(t, stackOptions{settings: settings})
	b := newBrowser(t, chromium)
	b.inZone("Asia/Seoul")
	seoul := time.FixedZone("KST", 9*60*60) // no summer time

	section := signInAdmin(b, s)
	after, input, submit := section+" .abandon-after", section+" [data-setting=abandon_after_ms] .setting-input", section+" [data-setting=abandon_after_ms] .setting-submit"
	ok, fieldErr := section+" [data-setting=abandon_after_ms] .setting-ok", section+" [data-setting=abandon_after_ms] .setting-error"
	if got := b.text(after); got != "120 s" {
		t.Errorf("%s = %q, want 120 s", after, got)
	}
	if got := eval[string](b, fmt.Sprintf(`document.querySelector(%q).value`, input)); got != "120" {
		t.Errorf("abandon field %q, want 120 (seconds)", got)
	}

	saveSetting(b, input, submit, "2.5")
	b.waitJS(5*time.Second, "the saved setting", fmt.Sprintf(`%s && %s === '2.5 s'`, jsShown(ok), jsText(after)))
	if msg := b.text(ok); msg != "Saved: a waiting place unheard for 2.5 s is dropped when the line reaches it." {
		t.Errorf("%s = %q", ok, msg)
	}
	if got := s.info().Settings.AbandonAfter; got != 2500*time.Millisecond {
		t.Fatalf("store abandon_after %v after saving 2.5 s", got)
	}

	// Silent users: those the line reaches after 2.5 s are dropped, and
	// the chart shows them on top of the admitted.
	s.fillWaiting("silent", 6)
	wait.For(t, 30*time.Second, "silent users dropped", func() (bool, string) {
		n := s.abandonedSoFar()
		return n >= 1, fmt.Sprintf("%d dropped", n)
	})
	b.waitJS(10*time.Second, "the abandoned bars", fmt.Sprintf(
		`document.querySelectorAll(%q).length > 0`, section+" svg.chart rect.abandoned-bar"))
	if key := section + " .abandoned-key"; !eval[bool](b, jsShown(key)) || b.text(key) != "Abandoned" {
		t.Errorf("the chart's key for the abandoned bars: shown %v, %q", eval[bool](b, jsShown(key)), b.text(key))
	}
	b.screenshot("abandoned-chart")

	saveSetting(b, input, submit, "-1")
	b.waitJS(5*time.Second, "the server's error", jsShown(fieldErr))
	if msg := b.text(fieldErr); msg != "abandon_after_ms must be an integer from 0 to 86400000 (invalid_settings)" {
		t.Errorf("%s = %q, want the server's invalid_settings message", fieldErr, msg)
	}
	if got := s.info().Settings.AbandonAfter; got != 2500*time.Millisecond {
		t.Errorf("store abandon_after %v after the invalid -1", got)
	}
	saveSetting(b, input, submit, "0")
	b.waitJS(5*time.Second, "abandonment off", fmt.Sprintf(`%s && !%s && %s === 'never'`, jsShown(ok), jsShown(fieldErr), jsText(after)))
	if got := s.info().Settings.AbandonAfter; got != 0 {
		t.Errorf("store abandon_after %v after saving 0", got)
	}

	// A scheduled opening, an hour ahead, typed in UTC.
	state, draw := section+" .opening-state", section+" .draw-record"
	save, clear := section+" .opening-submit", section+" .opening-clear"
	openingOK := section + " .opening-ok"
	if got := b.text(state); got != "No opening scheduled: people join the line as they arrive." {
		t.Errorf("%s = %q", state, got)
	}
	// The inputs of the pre-queue's time and of the opening's.
	inputs := func(name string) (date, clock string) {
		return section + " ." + name + "-date", section + " ." + name + "-time"
	}
	fromDate, fromClock := inputs("prequeue")
	atDate, atClock := inputs("opens")
	// typeTimes types each time's UTC date and clock (the zero time leaves
	// them empty); setTimes also presses Save.
	typeTimes := func(from, at time.Time) {
		t.Helper()
		set := func(date, clock string, v time.Time) string {
			d, c := "", ""
			if !v.IsZero() {
				d, c = v.UTC().Format("2006-01-02"), v.UTC().Format("15:04:05")
			}
			return fmt.Sprintf(`[%q, %q], [%q, %q]`, date, d, clock, c)
		}
		b.do("type the opening's times", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
			`for (const [css, v] of [%s, %s]) {
			   const el = document.querySelector(css); el.focus(); el.value = v;
			   el.dispatchEvent(new Event('input', {bubbles: true}));
			 }`, set(fromDate, fromClock, from), set(atDate, atClock, at))))
	}
	setTimes := func(from, at time.Time) {
		t.Helper()
		typeTimes(from, at)
		b.do("save the opening", chromedp.Click(chromedp.CSS(save)))
	}
	patches := func() int {
		return s.calls.count(func(c call) bool { return c.method == http.MethodPatch })
	}
	// utcWhen is how the page writes a time in UTC: the time of day, with
	// the date when it is not today (in UTC).
	utcWhen := func(v time.Time) string {
		v, layout := v.UTC(), "15:04:05 UTC"
		if v.Format(time.DateOnly) != time.Now().UTC().Format(time.DateOnly) {
			layout = "2 Jan, " + layout
		}
		return v.Format(layout)
	}
	from := time.Now().Add(time.Hour).Truncate(time.Second)
	at := from.Add(10 * time.Minute)

	// A date without a time: said under the field, nothing sent.
	before := patches()
	typeTimes(time.Time{}, at)
	b.do("drop the opening's time", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
		`(() => { const el = document.querySelector(%q); el.value = ''; el.dispatchEvent(new Event('input', {bubbles: true})); })()`, atClock)),
		chromedp.Click(chromedp.CSS(save)))
	opensErr := section + " .opens-error"
	b.waitJS(5*time.Second, "the missing time", jsShown(opensErr))
	if msg := b.text(opensErr); msg != "Enter a time (UTC) too." {
		t.Errorf("%s = %q", opensErr, msg)
	}
	if n := patches() - before; n != 0 {
		t.Errorf("%d PATCH requests for a date without a time, want none", n)
	}

	setTimes(from, at)
	b.waitJS(5*time.Second, "the saved opening", jsShown(openingOK))
	if info := s.info(); !info.PrequeueFrom.Equal(from) || !info.OpensAt.Equal(at) {
		t.Fatalf("store opening: pre-queue %v, opens %v; want %v, %v", info.PrequeueFrom, info.OpensAt, from, at)
	}
	if msg := b.text(openingOK); msg != "Saved: the line opens at "+utcWhen(at)+", joining from "+utcWhen(from)+"." {
		t.Errorf("%s = %q", openingOK, msg)
	}
	if shown := eval[bool](b, jsShown(opensErr)); shown {
		t.Error("the missing time's message still shows after a save")
	}
	b.waitJS(5*time.Second, "the opening's state", fmt.Sprintf(`%s.startsWith(%q)`, jsText(state), "Not open yet: joining opens at "+utcWhen(from)))
	// Under each time, what it is in the operator's own zone.
	for css, v := range map[string]time.Time{section + " .prequeue-local": from, section + " .opens-local": at} {
		if got := b.text(css); !eval[bool](b, jsShown(css)) || !strings.HasPrefix(got, "In your time zone (Asia/Seoul): ") || !strings.Contains(got, v.In(seoul).Format("15:04:05")) {
			t.Errorf("%s = %q, want %s in Asia/Seoul", css, got, v.In(seoul).Format("15:04:05"))
		}
	}
	b.screenshot("opening-scheduled")

	// What was saved is what the form shows after a reload: the same UTC
	// date and time, not this browser's.
	b.navigate(s.url + "/admin")
	b.waitJS(5*time.Second, "the dashboard after the reload", fmt.Sprintf(
		`document.body.dataset.state === 'signed-in' && document.querySelector(%q) !== null && document.querySelector(%q).value !== ''`, section, atDate))
	shown := eval[[]string](b, fmt.Sprintf(`[%q, %q, %q, %q].map((css) => document.querySelector(css).value)`, fromDate, fromClock, atDate, atClock))
	want := []string{from.UTC().Format("2006-01-02"), from.UTC().Format("15:04:05"), at.UTC().Format("2006-01-02"), at.UTC().Format("15:04:05")}
	if !slices.Equal(shown, want) {
		t.Errorf("the opening's inputs after a reload: %q; want %q as saved", shown, want)
	}
	if got := b.text(state); !strings.HasPrefix(got, "Not open yet: joining opens at "+utcWhen(from)) {
		t.Errorf("%s after a reload = %q", state, got)
	}

	// A pre-queue after the opening: the server's message under it.
	setTimes(at.Add(time.Minute), at)
	errCSS := section + " .prequeue-error"
	b.waitJS(5*time.Second, "the server's refusal", jsShown(errCSS))
	if msg := b.text(errCSS); !strings.Contains(msg, "prequeue_from must not be after opens_at") || !strings.HasSuffix(msg, "(invalid_settings)") {
		t.Errorf("%s = %q, want the server's invalid_settings message", errCSS, msg)
	}
	if inv := eval[string](b, fmt.Sprintf(`document.querySelector(%q).getAttribute('aria-invalid')`, fromDate)); inv != "true" {
		t.Errorf("pre-queue field aria-invalid = %q, want true", inv)
	}
	if info := s.info(); !info.PrequeueFrom.Equal(from) || !info.OpensAt.Equal(at) {
		t.Errorf("store opening after the refusal: %v, %v; want it unchanged", info.PrequeueFrom, info.OpensAt)
	}
	b.screenshot("opening-error")

	b.do("clear the opening", chromedp.Click(chromedp.CSS(clear)))
	b.waitJS(5*time.Second, "no opening", fmt.Sprintf(`%s && %s.startsWith('No opening scheduled') && document.querySelector(%q).value === ''`,
		jsShown(openingOK), jsText(state), atDate))
	if info := s.info(); !info.PrequeueFrom.IsZero() || !info.OpensAt.IsZero() {
		t.Errorf("store opening after Clear: %v, %v; want none", info.PrequeueFrom, info.OpensAt)
	}
	if shown := eval[bool](b, jsShown(errCSS)); shown {
		t.Error("the pre-queue error still shows after Clear")
	}

	// A real draw: the opening a few seconds ahead, joining open at once.
	at = time.Now().Add(4 * time.Second).Truncate(time.Second)
	setTimes(time.Time{}, at)
	b.waitJS(5*time.Second, "the saved opening", fmt.Sprintf(`%s && %s.startsWith('Pre-queue open')`, jsShown(openingOK), jsText(state)))
	if msg := b.text(openingOK); msg != "Saved: the line opens at "+utcWhen(at)+"; joining is open now." {
		t.Errorf("%s = %q", openingOK, msg)
	}
	for _, u := range names("drawn", 3) {
		if tk, err := s.store.Enter(context.Background(), s.queue, queue.Entry{Caller: queue.Caller{User: u}}); err != nil || tk.Status != queue.Waiting || tk.Position != 0 {
			t.Fatalf("store enter of %s before the opening: %+v, %v; want the draw", u, tk, err)
		}
	}
	wait.For(t, 30*time.Second, "the draw", func() (bool, string) {
		i := s.info()
		return i.DrawCount == 3, fmt.Sprintf("%d placed", i.DrawCount)
	})
	d, err := s.store.Draw(context.Background(), s.queue)
	if err != nil {
		t.Fatal(err)
	}
	wantDraw := fmt.Sprintf("Draw at %s: seed %s, 3 participants", utcWhen(at), d.Last.Seed)
	b.waitJS(5*time.Second, "the draw record", fmt.Sprintf(`%s === %q`, jsText(draw), wantDraw))
	if got := b.text(state); got != "Opened at "+utcWhen(at)+"." {
		t.Errorf("%s = %q", state, got)
	}
	b.screenshot("draw-record")
}
