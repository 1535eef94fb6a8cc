package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// powTestDifficulty is small, so the browser solves in milliseconds and
// the suite stays fast; the code path is the one a real difficulty takes.
const powTestDifficulty = 10

// apiEnter enters through the public API as a client without a browser
// does, with body as the JSON body; it returns the status and error code.
func (s *stack) apiEnter(body string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url+"/api/v1/queues/"+url.PathEscape(s.queue)+"/enter", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e) // a ticket has no error: code ""
	return resp.StatusCode, e.Error.Code
}

// calls returns the recorded calls of method to a path ending in suffix.
func (s *stack) callsTo(method, suffix string) []call {
	return s.calls.matching(func(c call) bool {
		return c.method == method && strings.HasSuffix(c.path, suffix)
	})
}

// recordStatusTexts makes every page b opens from now on keep each text
// #status-text shows in window.__statusTexts, in order, so a test sees
// states too short to poll for.
func recordStatusTexts(b *browser) {
	b.t.Helper()
	const js = `window.__statusTexts = [];
document.addEventListener('DOMContentLoaded', () => {
  const el = document.getElementById('status-text');
  if (!el) return;
  const note = () => {
    const v = el.textContent;
    if (window.__statusTexts[window.__statusTexts.length - 1] !== v) window.__statusTexts.push(v);
  };
  note();
  new MutationObserver(note).observe(el, {childList: true, characterData: true, subtree: true});
});`
	if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: js}); err != nil {
		b.fail("add the status-text recorder: %v", err)
	}
}

// A queue that asks for proof of work: an enter without a solution is
// refused, and a new visitor's page, refused the same way, solves a
// challenge in its worker while it says it checks the browser, enters
// with the solution and gets a place.
func TestChallengeSolvedByThePage(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1)})
	s.fillWaiting("ahead", 3) // before the difficulty: the store's own enters bring no proof
	d := powTestDifficulty
	s.update(queue.Update{ChallengeDifficulty: &d})

	// Without a solution, or with a made-up one, enter is refused.
	for _, body := range []string{`{}`, `{"challenge":"c1.forged","nonce":"1"}`} {
		if code, errCode := s.apiEnter(body); code != http.StatusForbidden || errCode != "challenge_required" {
			t.Errorf("enter %s = %d %q, want 403 challenge_required", body, code, errCode)
		}
	}

	before := len(s.callsTo(http.MethodPost, "/enter")) // the API's enters above
	b := newBrowser(t, chromium)
	recordStatusTexts(b)
	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(joinDeadline, "a place", jsState("waiting")+" || "+jsState("entered"))
	member := s.member(b)
	if tk := s.status(member); tk.Status != queue.Waiting && tk.Status != queue.Entered {
		t.Fatalf("store ticket of the page's member: %+v, want WAITING or ENTERED", tk)
	}
	b.screenshot("placed-after-challenge")

	// What the server saw from the page: an enter without a solution,
	// refused; one challenge; an enter with its solution, answered.
	enters := s.callsTo(http.MethodPost, "/enter")[before:]
	var codes []int
	for _, c := range enters {
		codes = append(codes, c.status)
	}
	if len(enters) != 2 || enters[0].status != http.StatusForbidden || enters[1].status != http.StatusOK {
		t.Errorf("the page's enters were answered %v, want [403 200]", codes)
	}
	if ch := s.callsTo(http.MethodGet, "/challenge"); len(ch) != 1 || ch[0].status != http.StatusOK {
		t.Errorf("the page fetched %d challenges (%v), want one, answered 200", len(ch), ch)
	}
	seen := eval[[]string](b, `window.__statusTexts`)
	if !slices.Contains(seen, "Checking your browser… (this takes a second)") {
		t.Errorf("#status-text went %q; want it to say it checks the browser", seen)
	}
	if p := eval[int](b, `document.getElementById('check-progress').value`); p != 100 {
		t.Errorf("the check's progress bar ends at %d, want 100", p)
	}
	if shown := eval[bool](b, jsShown("#checking")); shown {
		t.Error("the check's progress bar still shows with a place")
	}

	// A reload holds the place: the page asks for the status and enters
	// no more, so it solves nothing more.
	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(10*time.Second, "the place after a reload", jsState("waiting")+" || "+jsState("entered"))
	if got := s.member(b); got != member {
		t.Errorf("after a reload the page holds %q, want %q", got, member)
	}
	if n := len(s.callsTo(http.MethodPost, "/enter")) - before; n != 2 {
		t.Errorf("the page made %d enters by the end, want still 2 after the reload", n)
	}
}

// The line is at its cap: the page says it is full and when to try again
// in local time (HH:MM), tries once by itself at that time and then leaves
// it to the button; once there is room, the button gets a place.
func TestLineFullPage(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1)})
	// Paused, nobody moves: the line fills to its cap of 3 and stays so.
	// (Filled first and paused after, a tick in between once admitted
	// one of the three on a loaded machine, and the page got a place.)
	paused, capacity := true, 3
	s.update(queue.Update{Paused: &paused, MaxWaiting: &capacity})
	s.fillWaiting("ahead", 3)

	b := newBrowser(t, chromium)
	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(10*time.Second, "the full panel", jsState("full")+" && "+jsShown("#full"))
	text := b.text("#full-title") + ". " + b.text("#full-text")
	m := regexp.MustCompile(`^The line is full right now\. Try again at (\d\d):(\d\d) \(local time\)\.$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the full panel reads %q, want the line-full message with an HH:MM time", text)
	}
	// The time is the browser's local time, rounded up to the minute: a
	// few seconds ahead at most here (the next tick).
	at, err := time.ParseInLocation("15:04", m[1]+":"+m[2], time.Local)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	at = time.Date(now.Year(), now.Month(), now.Day(), at.Hour(), at.Minute(), 0, 0, time.Local)
	if at.Before(now.Add(-time.Minute)) {
		at = at.Add(24 * time.Hour) // past midnight
	}
	if d := at.Sub(now); d < -time.Minute || d > 2*time.Minute {
		t.Errorf("the page says try again at %s, %v from now; want within a minute or two", at.Format("15:04"), d.Round(time.Second))
	}
	if !eval[bool](b, jsShown("#full-retry")) {
		t.Error("no button to try again")
	}
	b.screenshot("line-full")

	// One automatic retry at that time, still full; then no more.
	fullEnters := func() int {
		return len(s.calls.matching(func(c call) bool {
			return c.method == http.MethodPost && strings.HasSuffix(c.path, "/enter") && c.status == http.StatusServiceUnavailable
		}))
	}
	wait.For(t, 30*time.Second, "the automatic retry", func() (bool, string) {
		n := fullEnters()
		return n == 2, fmt.Sprintf("%d enters answered queue_full", n)
	})
	b.waitJS(5*time.Second, "the full panel again, without the automatic retry's note",
		jsState("full")+" && !"+jsShown("#full-auto"))
	// Absence is what is checked here, so the test watches for a while:
	// the page must not try again by itself.
	time.Sleep(3 * time.Second)
	if n := len(s.callsTo(http.MethodPost, "/enter")); n != 2 {
		t.Errorf("%d enters in all, want 2: the first and the one automatic retry", n)
	}

	// Room again: the button gets a place, at the back.
	none := 0
	s.update(queue.Update{MaxWaiting: &none})
	b.do("try again", chromedp.Click(chromedp.CSS("#full-retry")))
	b.waitJS(joinDeadline, "a place", jsState("waiting"))
	if pos := b.number("#position"); pos != 4 {
		t.Errorf("position %d after trying again, want 4 (behind the 3 waiting)", pos)
	}
}

// A page over its status rate limit waits as the 429 says and goes on
// silently: it keeps its place on screen, never shows the reconnecting
// banner, and never asks again before Retry-After (so no two refusals in
// a row).
func TestRateLimitedPageWaitsSilently(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	settings := fastTicks(1)
	// A status every 2.5 s per place, against polls every second or so.
	settings.Limits = queue.Limits{StatusPerPlace: queue.Limit{Rate: 0.4, Burst: 1}}
	s := newStack(t, stackOptions{settings: settings})
	// Near the head, where a page polls its status (far back it reads the
	// line's document instead), and held there: the line is paused.
	s.fillWaiting("ahead", 5)
	paused := true
	s.update(queue.Update{Paused: &paused})

	b := newBrowser(t, chromium)
	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	member := s.member(b)

	statuses := func() []call {
		return s.calls.matching(func(c call) bool {
			return c.method == http.MethodGet && strings.HasSuffix(c.path, "/status") && c.member == member
		})
	}
	limited := func() int {
		n := 0
		for _, c := range statuses() {
			if c.status == http.StatusTooManyRequests {
				n++
			}
		}
		return n
	}
	// While it waits, the page must show no reconnecting banner and stay
	// in line.
	wait.For(t, 20*time.Second, "two rate-limited polls (else the test's limit does not bite)", func() (bool, string) {
		if eval[bool](b, jsShown("#reconnecting")) {
			b.fail("the reconnecting banner shows for a rate-limited poll")
		}
		if state := eval[string](b, `document.body.dataset.state`); state != "waiting" && state != "entered" {
			b.fail("the page went to %q while rate-limited", state)
		}
		n := limited()
		return n >= 2, fmt.Sprintf("%d of %d polls rate-limited", n, len(statuses()))
	})
	calls := statuses()
	for i := 1; i < len(calls); i++ {
		if calls[i-1].status == http.StatusTooManyRequests && calls[i].status == http.StatusTooManyRequests {
			t.Errorf("polls %d and %d were both refused: the page asked again before Retry-After (%v apart)",
				i-1, i, calls[i].at.Sub(calls[i-1].at).Round(time.Millisecond))
		}
	}
	if p := b.text("#position"); p == "" || p == "–" {
		t.Errorf("#position = %q while rate-limited, want the last known place", p)
	}
}

// adminQueue is what GET /admin/v1/queues/{queue} says of the defences.
type adminQueue struct {
	Waiting             int `json:"waiting"`
	MaxWaiting          int `json:"max_waiting"`
	ChallengeDifficulty int `json:"challenge_difficulty"`
}

func (s *stack) adminQueue() adminQueue {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+"/admin/v1/queues/"+url.PathEscape(s.queue), nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("admin view of %s: %s", s.queue, resp.Status)
	}
	var q adminQueue
	if err := json.NewDecoder(resp.Body).Decode(&q); err != nil {
		s.t.Fatal(err)
	}
	return q
}

// The operator sets the line's cap and the proof of work in the back
// office: each is saved with the PATCH the other settings use, the admin
// API shows it, a value out of range is refused under its field, and 0
// turns each off again.
func TestBackOfficeSetsDefences(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1)})
	// Paused before anyone joins, so nobody moves and the line stays at
	// 2: paused after, a tick in between could admit one.
	paused := true
	s.update(queue.Update{Paused: &paused})
	s.fillWaiting("ahead", 2)
	b := newBrowser(t, chromium)
	section := signInAdmin(b, s)
	capIn, capSave, capOK, capErr := section+" [data-setting=max_waiting] .setting-input", section+" [data-setting=max_waiting] .setting-submit", section+" [data-setting=max_waiting] .setting-ok", section+" [data-setting=max_waiting] .setting-error"
	powIn, powSave, powOK, powErr := section+" [data-setting=challenge_difficulty] .setting-input", section+" [data-setting=challenge_difficulty] .setting-submit", section+" [data-setting=challenge_difficulty] .setting-ok", section+" [data-setting=challenge_difficulty] .setting-error"

	b.waitJS(5*time.Second, "the fields filled from the server", fmt.Sprintf(
		`document.querySelector(%q).value === '0' && document.querySelector(%q).value === '0'`, capIn, powIn))
	if got := b.text(section + " .pow"); got != "off" {
		t.Errorf("proof of work shows %q before any change, want off", got)
	}
	if hint := b.text(section + " [data-setting=challenge_difficulty] .hint"); !strings.Contains(hint, "16 ≈ 1 s for a person") {
		t.Errorf("the proof-of-work hint = %q, want the measured 16 ≈ 1 s", hint)
	}

	saveSetting(b, capIn, capSave, "2")
	b.waitJS(5*time.Second, "the cap saved", jsShown(capOK))
	if got := b.text(capOK); got != "Saved: at most 2 people waiting; newcomers beyond are told the line is full." {
		t.Errorf("%s = %q", capOK, got)
	}
	saveSetting(b, powIn, powSave, "12")
	b.waitJS(5*time.Second, "the difficulty saved", jsShown(powOK))
	if got := b.text(powOK); got != "Saved: pages solve a proof of work of difficulty 12 before entering." {
		t.Errorf("%s = %q", powOK, got)
	}
	if q := s.adminQueue(); q.MaxWaiting != 2 || q.ChallengeDifficulty != 12 {
		t.Fatalf("admin API after saving: max_waiting %d, challenge_difficulty %d; want 2 and 12", q.MaxWaiting, q.ChallengeDifficulty)
	}
	b.waitJS(5*time.Second, "the line shown at its cap", fmt.Sprintf(`%s === '2 / 2 (full)' && %s === 'difficulty 12'`,
		jsText(section+" .waiting"), jsText(section+" .pow")))
	b.screenshot("defences-set")

	// Out of range: the server's message under the field, nothing changed.
	saveSetting(b, powIn, powSave, "33")
	b.waitJS(5*time.Second, "the range error", jsShown(powErr))
	if got := b.text(powErr); !strings.Contains(got, "challenge_difficulty") && !strings.Contains(got, "32") {
		t.Errorf("%s = %q, want the server's range message", powErr, got)
	}
	if q := s.adminQueue(); q.ChallengeDifficulty != 12 {
		t.Errorf("challenge_difficulty %d after a refused 33, want still 12", q.ChallengeDifficulty)
	}

	// 0 turns each off.
	saveSetting(b, capIn, capSave, "0")
	b.waitJS(5*time.Second, "no cap saved", fmt.Sprintf(`%s === 'Saved: no cap on the line.'`, jsText(capOK)))
	saveSetting(b, powIn, powSave, "0")
	b.waitJS(5*time.Second, "proof of work off", fmt.Sprintf(`%s === 'Saved: no proof of work before entering.'`, jsText(powOK)))
	if shown := eval[bool](b, jsShown(capErr)); shown {
		t.Errorf("%s shows %q after a valid save", capErr, b.text(capErr))
	}
	if q := s.adminQueue(); q.MaxWaiting != 0 || q.ChallengeDifficulty != 0 {
		t.Errorf("admin API after turning both off: max_waiting %d, challenge_difficulty %d; want 0 and 0", q.MaxWaiting, q.ChallengeDifficulty)
	}
}
