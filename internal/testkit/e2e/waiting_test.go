package e2e

import (
	"context"
	"fmt"
	"html"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/envconfig"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/trust/place"
)

// joinDeadline bounds the wait for a page to join the line and show it:
// every first join of a page waits with it. Alone a page does it in well
// under a second, and under the whole suite on two cores in a few. Pages
// once stayed on "Joining the line…" for good: a module lost
// to net::ERR_NETWORK_CHANGED when Docker started a container, which
// the page's rescue now reloads. The wait ends as soon as the page gets
// there, and when it does not, the failure prints the page's journal
// (journal_test.go): every request it made, with its answer or failure,
// and its console.
const joinDeadline = 60 * time.Second

// fastTicks admits refill users per second: the tests see ticks quickly.
func fastTicks(refill int) queue.Settings {
	return queue.Settings{RefillSize: refill, RefillInterval: time.Second, SessionTTL: time.Minute}
}

// orderPage is a fake order page on another origin, where admitted users
// are sent. Like a real one, its server checks the entry pass it gets in
// wr_pass with the waiting room (GET /api/v1/verify) before it lets
// anyone in.
type orderPage struct {
	url string

	mu       sync.Mutex
	waitroom string // the waiting room's base URL
	queue    string // the queue whose passes it takes
	got      []orderVisit
}

// orderVisit is one request to /order and what verify said about its pass.
type orderVisit struct {
	query  url.Values
	verify verifyAnswer
}

func newOrderPage(t *testing.T) *orderPage {
	o := &orderPage{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/order" {
			http.NotFound(w, r)
			return
		}
		o.mu.Lock()
		waitroom, queue := o.waitroom, o.queue
		o.mu.Unlock()
		v := orderVisit{query: r.URL.Query()}
		var err error
		v.verify, err = verify(r.Context(), waitroom, queue, v.query.Get("wr_pass"))
		if err != nil {
			t.Errorf("order page: verify: %v", err)
		}
		o.mu.Lock()
		o.got = append(o.got, v)
		o.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		const head = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Order</title></head><body>`
		if v.verify.Status != http.StatusOK {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, head+`<h1 id="refused">Entry pass refused (%d)</h1></body></html>`, v.verify.Status)
			return
		}
		fmt.Fprintf(w, head+`<h1 id="order">Order page</h1><p id="who">Welcome in, %s.</p></body></html>`,
			html.EscapeString(v.verify.Sub))
	}))
	t.Cleanup(srv.Close)
	o.url = srv.URL + "/order"
	return o
}

// checkWith makes the page verify passes for queue with the waiting room
// at url.
func (o *orderPage) checkWith(url, queue string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.waitroom, o.queue = url, queue
}

func (o *orderPage) visits() []orderVisit {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]orderVisit(nil), o.got...)
}

// jsState is a condition on body[data-state].
func jsState(state string) string {
	return fmt.Sprintf(`document.body.dataset.state === %q`, state)
}

// A user who arrives after the tokens ran out sees their place and an
// estimate, moves up with the ticks and is sent to the order page with an
// entry pass and nothing else: no user id, no member id. The order page's
// server checks the pass with the waiting room and lets the user in; once
// the operator has removed the user, the same pass is refused.
func TestWaitingUserIsAdmittedAndRedirected(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	order := newOrderPage(t)
	s := newStack(t, stackOptions{settings: fastTicks(1), targetURL: order.url})
	order.checkWith(s.url, s.queue)
	b := newBrowser(t, chromium)
	s.fillWaiting("ahead", 5)

	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	member := s.member(b)

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
	// A handful of people at one per second: well under a minute, said
	// the same way in the summary line and on the card.
	if st, eta := summaryAndEta(b); eta != "less than a minute" || st != fmt.Sprintf("%d people are waiting; estimated wait %s", b.number("#waiting-total"), eta) {
		t.Errorf("#status-text = %q, #eta = %q; want the line summary ending in the card's 'less than a minute'", st, eta)
	}
	// The bar starts at 0 % on arrival, at the position joined at (the
	// store may already be a tick ahead).
	arrival := progress(b)
	if arrival.Percent != arrival.want() || arrival.Percent >= 100 || arrival.Position == arrival.Initial && arrival.Percent != 0 {
		t.Errorf("progress on arrival %+v, want %d%%: 0 at the position joined at, below 100", arrival, arrival.want())
	}
	// The page shows what the store says (the store may be a tick ahead).
	if tk := s.status(member); tk.Status != queue.Waiting || tk.Position > first {
		t.Errorf("store ticket %+v, page position %d", tk, first)
	}
	b.screenshot("waiting")

	b.waitJS(10*time.Second, "the position to drop after a tick", fmt.Sprintf(
		`document.body.dataset.state === 'waiting' && Number(document.getElementById('position').textContent.replace(/,/g, '')) < %d`, first))
	if p := b.number("#position"); p >= first {
		t.Fatalf("position %d, want below %d", p, first)
	}
	if moved := progress(b); moved.Percent != moved.want() || moved.Percent <= arrival.Percent || moved.Percent >= 100 {
		t.Errorf("progress after moving up %+v, want %d%%, above the %d%% on arrival and below 100", moved, moved.want(), arrival.Percent)
	}
	b.screenshot("moved-up")

	b.waitJS(20*time.Second, "the redirect to the order page",
		fmt.Sprintf(`location.href.startsWith(%q)`, order.url))
	b.waitJS(5*time.Second, "the order page to let the user in", `document.getElementById('order') !== null`)
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if len(q) != 1 || q.Get("wr_pass") == "" {
		t.Errorf("landed on %s; want wr_pass as the only parameter", loc)
	}
	if strings.Contains(loc, member) || strings.Contains(loc, url.QueryEscape(member)) {
		t.Errorf("the member id %s is in the order page's URL %s", member, loc)
	}
	visits := order.visits()
	if len(visits) != 1 {
		t.Fatalf("order page got %d requests, want 1", len(visits))
	}
	if v := visits[0].verify; v.Status != http.StatusOK || v.Sub != member || v.Queue != s.queue {
		t.Errorf("verify of the pass answered %+v, want 200 for %s in %s", v, member, s.queue)
	}
	if who := b.text("#who"); !strings.Contains(who, member) {
		t.Errorf("order page says %q, want it to name %s", who, member)
	}
	if tk := s.status(member); tk.Status != queue.Entered {
		t.Errorf("store status %s after the redirect, want ENTERED", tk.Status)
	}
	if enters := s.enterRequests(); enters != 1 {
		t.Errorf("%d enter requests, want 1", enters)
	}
	b.screenshot("order-page")

	// The operator removes the user: the pass the page got is refused now.
	s.remove(member)
	b.reload()
	b.waitJS(5*time.Second, "the order page to refuse the pass", `document.getElementById('refused') !== null`)
	visits = order.visits()
	if len(visits) != 2 || visits[1].verify.Status != http.StatusUnauthorized {
		t.Errorf("order page visits %+v; want the second pass check answered 401", visits)
	} else if visits[1].query.Get("wr_pass") != visits[0].query.Get("wr_pass") {
		t.Error("the reload sent another pass")
	}
	b.screenshot("pass-refused")
}

// progressBar is what the waiting page's progress bar shows, and what it
// is measured from: the position now and the one the place was joined at
// (kept in localStorage).
type progressBar struct {
	Percent  int    `json:"percent"`  // progress.value
	Text     string `json:"text"`     // #progress-text
	Position int    `json:"position"` // #position
	Initial  int    `json:"initial"`  // the position joined at
}

func progress(b *browser) progressBar {
	b.t.Helper()
	p := eval[progressBar](b, `(() => {
	  const place = JSON.parse(localStorage.getItem(Object.keys(localStorage).find((k) => k.startsWith('waitroom:place:'))) || 'null');
	  return {
	    percent: document.getElementById('progress').value,
	    text: document.getElementById('progress-text').textContent,
	    position: Number(document.getElementById('position').textContent.replace(/,/g, '')),
	    initial: place ? place.initial_position : 0,
	  };
	})()`)
	if p.Text != fmt.Sprintf("%d%%", p.Percent) {
		b.t.Errorf("#progress-text %q beside a bar at %d%%", p.Text, p.Percent)
	}
	return p
}

// want is the page's rule: 0 on joining at P, each place moved up one
// P-th of the way, kept below 100 % while waiting.
func (p progressBar) want() int {
	f := float64(p.Initial-p.Position) / float64(max(p.Initial, 1))
	return min(99, max(0, int(math.Round(f*100))))
}

// summaryAndEta reads the summary line and the Estimated wait card at once.
func summaryAndEta(b *browser) (summary, eta string) {
	b.t.Helper()
	v := eval[[]string](b, `[document.getElementById('status-text').textContent.trim(), document.getElementById('eta').textContent.trim()]`)
	return v[0], v[1]
}

// Someone who joins at the front (position 1, the next tick admits them,
// an hour from now) is not shown as done: the bar is at 0 %, where every
// new place starts, not 100 %.
// The summary line and the card give the wait in the same words, in
// English and in Korean.
func TestWaitingAtTheFront(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Minute}})
	b := newBrowser(t, chromium)
	// Use up this interval's token, and leave nobody waiting.
	for i := 0; ; i++ {
		u := fmt.Sprintf("first-%d", i)
		tk, err := s.store.Enter(context.Background(), s.queue, queue.Entry{Caller: queue.Caller{User: u}})
		if err != nil || i > 10 {
			t.Fatalf("enter %s: %+v, %v", u, tk, err)
		}
		if tk.Status == queue.Waiting {
			if err := s.store.Leave(context.Background(), s.queue, queue.Caller{User: u}); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if w := s.info().Waiting; w != 0 {
		t.Fatalf("%d waiting before the user joins, want 0", w)
	}

	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	if p := progress(b); p.Position != 1 || p.Initial != 1 || p.Percent != 0 {
		t.Errorf("progress at the front %+v, want position 1 joined at 1 and the bar at 0%%", p)
	}
	st, eta := summaryAndEta(b)
	if !strings.HasPrefix(eta, "about ") || st != "1 person is waiting; estimated wait "+eta {
		t.Errorf("#status-text = %q, #eta = %q; want the summary to end in the card's estimate", st, eta)
	}
	b.screenshot("front")

	b.do("switch to Korean", chromedp.Click(chromedp.CSS("#lang-ko")))
	b.waitJS(5*time.Second, "the Korean page", `document.documentElement.lang === 'ko'`)
	st, eta = summaryAndEta(b)
	if !strings.HasPrefix(eta, "약 ") || st != "현재 대기 인원 1명, 예상 대기 시간 "+eta {
		t.Errorf("Korean #status-text = %q, #eta = %q; want the summary to end in the card's estimate", st, eta)
	}
	if p := progress(b); p.Percent != 0 {
		t.Errorf("progress in Korean %+v, want 0%%", p)
	}
	b.screenshot("front-ko")
}

// A reload resumes the same place: the place cookie names it, and the page
// asks for the status instead of entering again (which would send the user
// to the back).
func TestReloadKeepsPlace(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1)})
	b := newBrowser(t, chromium)
	s.fillWaiting("ahead", 8)

	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	member := s.member(b)
	if !strings.HasPrefix(member, "a:") {
		t.Errorf("member %q, want a server-chosen a:... id", member)
	}
	if c := b.cookie(s.url, place.CookieName(s.queue, false)); !c.HTTPOnly || c.SameSite != network.CookieSameSiteLax {
		t.Errorf("place cookie %+v, want HttpOnly and SameSite=Lax", c)
	}
	if page := eval[bool](b, `document.cookie.includes('wr_place_')`); page {
		t.Error("the page script can read the place cookie")
	}
	// The first visit asked for its status, found no place, and entered:
	// once, or once a load where navigate loaded the page again because the
	// network changed under it; one enter in all.
	if n := s.calls.count(func(c call) bool {
		return strings.HasSuffix(c.path, "/status") && c.status == http.StatusUnauthorized
	}); n < 1 || n > b.loads {
		t.Errorf("%d status requests answered 401 on the first visit's %d loads, want one, or one a load", n, b.loads)
	}
	if enters := s.enterRequests(); enters != 1 {
		t.Errorf("%d enter requests on the first visit, want 1", enters)
	}
	if tk := s.status(member); tk.Status != queue.Waiting {
		t.Fatalf("store status of %s = %s, want WAITING", member, tk.Status)
	}
	s.fillWaiting("behind", 5) // people behind: the tail is no longer our place
	before := b.number("#position")
	b.screenshot("before-reload")

	callsBefore := s.statusCalls(member)
	b.reload()
	b.waitJS(30*time.Second, "the waiting state after the reload", jsState("waiting"))

	if got := s.member(b); got != member {
		t.Errorf("member after reload = %q, want %q", got, member)
	}
	if s.statusCalls(member) <= callsBefore {
		t.Errorf("no status request for %s after the reload", member)
	}
	if enters := s.enterRequests(); enters != 1 {
		t.Errorf("%d enter requests, want 1 (a reload must not enter again)", enters)
	}
	tk := s.status(member)
	if tk.Status != queue.Waiting || tk.Position > before || tk.Position >= tk.Waiting {
		t.Errorf("after reload the store has %+v; want WAITING at or before position %d and not at the tail", tk, before)
	}
	if after := b.number("#position"); after > before {
		t.Errorf("page position %d after reload, was %d", after, before)
	}
	b.screenshot("after-reload")
}

// Leaving through the dialog gives up the place: DELETE .../place, the
// store forgets the member and the browser the cookie. Joining again is a
// new place.
func TestLeaveRemovesUser(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	// Slow ticks: the line must still be there when the user joins again.
	settings := queue.Settings{RefillSize: 1, RefillInterval: 10 * time.Second, SessionTTL: time.Minute}
	s := newStack(t, stackOptions{settings: settings})
	b := newBrowser(t, chromium)
	s.fillWaiting("ahead", 8)

	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	member := s.member(b)

	dialogOpen := `document.getElementById('leave-dialog').open`
	b.do("open the dialog", chromedp.Click(chromedp.CSS("#leave-btn")))
	b.waitJS(5*time.Second, "the leave dialog", dialogOpen)
	b.screenshot("leave-dialog")

	b.do("stay in line", chromedp.Click(chromedp.CSS("#leave-cancel")))
	b.waitJS(5*time.Second, "the dialog to close", `!`+dialogOpen+` && `+jsState("waiting"))
	if tk := s.status(member); tk.Status != queue.Waiting {
		t.Fatalf("after 'stay in line' the store status is %s, want WAITING", tk.Status)
	}

	b.do("leave", chromedp.Click(chromedp.CSS("#leave-btn")))
	b.waitJS(5*time.Second, "the leave dialog", dialogOpen)
	b.do("confirm", chromedp.Click(chromedp.CSS("#leave-confirm")))
	b.waitJS(5*time.Second, "the left state",
		jsState("left")+` && !document.getElementById('left').hidden && !`+dialogOpen)
	wait.For(t, 30*time.Second, "the store to forget the member", func() (bool, string) {
		tk := s.status(member)
		return tk.Status == queue.NotWaiting, string(tk.Status)
	})
	// The store changes before the handler returns and the call is recorded.
	wait.For(t, 30*time.Second, "one successful DELETE .../place", func() (bool, string) {
		n := s.calls.count(func(c call) bool {
			return c.method == http.MethodDelete && strings.HasSuffix(c.path, "/place") &&
				c.member == member && c.status == http.StatusNoContent
		})
		return n == 1, fmt.Sprintf("%d", n)
	})
	if n := s.calls.count(func(c call) bool { return c.method == http.MethodDelete }); n != 1 {
		t.Errorf("%d DELETE requests, want 1", n)
	}
	wait.For(t, 30*time.Second, "the browser to drop the place cookie", func() (bool, string) {
		c := b.cookie(s.url, place.CookieName(s.queue, false))
		return c == nil, fmt.Sprintf("%+v", c)
	})
	if enters := s.enterRequests(); enters != 1 {
		t.Errorf("%d enter requests, want 1", enters)
	}
	if place := eval[bool](b, fmt.Sprintf(`localStorage.getItem(%q) === null`, "waitroom:place:"+s.queue)); !place {
		t.Error("the saved place is still in localStorage after leaving")
	}
	b.screenshot("left")

	b.do("join again", chromedp.Click(chromedp.CSS("#join-again")))
	b.waitJS(30*time.Second, "the waiting state after joining again", jsState("waiting"))
	again := s.member(b)
	if again == member {
		t.Errorf("joined again as %s, the member that left", member)
	}
	if tk := s.status(again); tk.Status != queue.Waiting || tk.Position != tk.Waiting {
		t.Errorf("joined again: store has %+v, want WAITING at the back", tk)
	}
	if enters := s.enterRequests(); enters != 2 {
		t.Errorf("%d enter requests after joining again, want 2", enters)
	}
}

// An admitted user who reloads sees the turn again with an entry pass and
// keeps the admission: the page asks for the status and does not enter
// again, which would send the user to the back and revoke the pass.
func TestAdmittedReloadKeepsTurn(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1)})
	b := newBrowser(t, chromium)
	s.fillWaiting("ahead", 2)

	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(15*time.Second, "the turn", jsState("entered")+` && !document.getElementById('turn').hidden`)
	member := s.member(b)
	start, ok, err := s.store.Admission(context.Background(), s.queue, member)
	if err != nil || !ok {
		t.Fatalf("store: admission of %s: %v, %v", member, ok, err)
	}
	first := eval[string](b, `document.getElementById('pass').value`)
	if a := s.verify(first); a.Status != http.StatusOK || a.Sub != member {
		t.Fatalf("verify of the page's pass: %+v, want 200 for %s", a, member)
	}

	callsBefore := s.statusCalls(member)
	b.reload()
	b.waitJS(10*time.Second, "the turn after the reload",
		jsState("entered")+` && !document.getElementById('turn').hidden && document.getElementById('pass').value !== ''`)
	if st := b.text("#status-text"); st != "It's your turn" {
		t.Errorf("#status-text = %q after the reload", st)
	}
	if enters := s.enterRequests(); enters != 1 {
		t.Errorf("%d enter requests, want 1 (a reload must not enter again)", enters)
	}
	if s.statusCalls(member) <= callsBefore {
		t.Errorf("no status request for %s after the reload", member)
	}
	if got := s.member(b); got != member {
		t.Errorf("member after reload = %q, want %q", got, member)
	}
	again, ok, err := s.store.Admission(context.Background(), s.queue, member)
	if err != nil || !ok || !again.Equal(start) {
		t.Errorf("admission after the reload: %v (%v, %v), want the one from %v", again, ok, err, start)
	}
	second := eval[string](b, `document.getElementById('pass').value`)
	for name, p := range map[string]string{"before": first, "after": second} {
		if a := s.verify(p); a.Status != http.StatusOK || a.Sub != member {
			t.Errorf("verify of the pass from %s the reload: %+v, want 200 for %s", name, a, member)
		}
	}
	b.screenshot("turn-after-reload")

	s.remove(member)
	if a := s.verify(second); a.Status != http.StatusUnauthorized {
		t.Errorf("verify after the removal: %d, want 401", a.Status)
	}
}

// Without a target URL, a return path or a next path the page knows
// nowhere to send the user: the turn offers no link (one back to this page
// would only enter the line again as somebody new) and says to go back to
// the site and reload it. The pass is no next step: it is folded away for
// developers, and opening the fold shows one the site accepts. In both
// languages.
func TestTurnWithoutTargetSaysGoBack(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1)})
	b := newBrowser(t, chromium)
	// Paused until the page waits in line: a loaded machine may take
	// longer to start the page than the line takes to admit three, and
	// the page would then be let in at its enter, never waiting.
	paused, resumed := true, false
	s.update(queue.Update{Paused: &paused})
	s.fillWaiting("ahead", 3)

	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	s.update(queue.Update{Paused: &resumed})
	b.waitJS(joinDeadline, "the turn", jsState("entered")+` && !document.getElementById('turn').hidden`)
	member := s.member(b)

	if links := eval[[]string](b, `Array.from(document.querySelectorAll('a[href]'), (a) => a.href)`); len(links) != 0 {
		t.Errorf("links on the turn page: %v; want none", links)
	}
	if shown := eval[bool](b, `document.getElementById('turn-link').checkVisibility()`); shown {
		t.Error("#turn-link is visible without a target URL")
	}
	if got := b.text("#turn-body"); got != "Your turn has started. Go back to the site you came from and reload the page." {
		t.Errorf("#turn-body = %q, want the words to go back to the site", got)
	}
	if shown := eval[bool](b, `document.getElementById('pass').checkVisibility()`); shown {
		t.Error("the entry pass shows as the page's content; want it folded away")
	}
	if got := b.text("#pass-box > summary"); got != "For developers: entry pass" {
		t.Errorf("the pass's fold reads %q", got)
	}
	if open := eval[bool](b, `document.getElementById('pass-box').open`); open {
		t.Error("the pass's fold is open at first")
	}
	b.screenshot("turn-go-back")

	b.do("open the fold", chromedp.Click(chromedp.CSS("#pass-box > summary")))
	b.waitJS(5*time.Second, "the pass", `document.getElementById('pass').checkVisibility()`)
	if label := eval[string](b, `document.getElementById('pass').labels[0].textContent`); label != "Entry pass" {
		t.Errorf("pass label %q, want \"Entry pass\"", label)
	}
	p := eval[string](b, `document.getElementById('pass').value`)
	if a := s.verify(p); a.Status != http.StatusOK || a.Sub != member || a.Queue != s.queue {
		t.Errorf("verify of the shown pass: %+v, want 200 for %s in %s", a, member, s.queue)
	}
	if enters := s.enterRequests(); enters != 1 {
		t.Errorf("%d enter requests, want 1", enters)
	}
	b.screenshot("turn-pass-open")

	b.do("switch to Korean", chromedp.Click(chromedp.CSS("#lang-ko")))
	b.waitJS(5*time.Second, "Korean", `document.documentElement.lang === 'ko'`)
	if got := b.text("#turn-body"); !strings.Contains(got, "새로고침") {
		t.Errorf("#turn-body in Korean = %q, want the words to go back and reload", got)
	}
	if got := b.text("#pass-box > summary"); got != "개발자용: 입장권" {
		t.Errorf("the pass's fold in Korean reads %q", got)
	}
	if label := eval[string](b, `document.getElementById('pass').labels[0].textContent`); label != "입장권" {
		t.Errorf("pass label in Korean %q, want 입장권", label)
	}
	if got := eval[string](b, `document.getElementById('pass').value`); got != p {
		t.Error("switching the language changed the pass")
	}
	b.screenshot("turn-go-back-korean")
}

// A site's join token names the account, not the browser: the same user
// joining from two browsers (two profiles, two cookie jars) holds one
// place, and the second join keeps it where it is. A token the waiting
// room cannot verify is refused and enters nobody.
func TestJoinTokenOnePlacePerAccount(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	secret := newSecret()
	settings := queue.Settings{RefillSize: 1, RefillInterval: 10 * time.Second, SessionTTL: time.Minute}
	s := newStack(t, stackOptions{settings: settings, joinSecret: secret})
	s.fillWaiting("ahead", 3)
	const sub = "site-user-7"
	token := s.joinToken(secret, sub)
	page := s.url + "/q/" + s.queue + "?join="

	phone := newBrowser(t, chromium)
	phone.navigate(page + url.QueryEscape(token))
	phone.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	member := s.member(phone)
	if member != "u:"+sub {
		t.Fatalf("member %q, want u:%s", member, sub)
	}
	if kept := eval[bool](phone, `new URLSearchParams(location.search).has('join')`); kept {
		t.Error("the join token is still in the address after joining")
	}
	first := s.status(member)
	if first.Status != queue.Waiting {
		t.Fatalf("store: %+v", first)
	}
	s.fillWaiting("behind", 3)

	laptop := newBrowser(t, chromium)
	laptop.navigate(page + url.QueryEscape(s.joinToken(newSecret(), sub))) // signed with another secret
	laptop.waitJS(10*time.Second, "the error for a bad join token", jsState("error"))
	if msg := laptop.text("#error-text"); !strings.Contains(msg, "not valid or has expired") {
		t.Errorf("#error-text = %q", msg)
	}
	if shown := eval[bool](laptop, `document.getElementById('retry').checkVisibility()`); shown {
		t.Error("the error offers to join again with a link that cannot work")
	}
	if c := laptop.cookie(s.url, place.CookieName(s.queue, false)); c != nil {
		t.Errorf("a refused join token left a place cookie: %+v", c)
	}
	laptop.screenshot("bad-join-token")
	badLoads := laptop.loads

	laptop.navigate(page + url.QueryEscape(token))
	laptop.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	if got := s.member(laptop); got != member {
		t.Errorf("second browser holds %q, want %q", got, member)
	}
	tk := s.status(member)
	if tk.Status != queue.Waiting || tk.Position > first.Position || tk.Position >= tk.Waiting {
		t.Errorf("after the second join the store has %+v; want WAITING at or before %d, not at the back", tk, first.Position)
	}
	if pos := laptop.number("#position"); pos > first.Position {
		t.Errorf("second browser shows position %d, the place was %d", pos, first.Position)
	}
	joined := s.calls.count(func(c call) bool {
		return strings.HasSuffix(c.path, "/enter") && c.status == http.StatusOK && c.member == member
	})
	refused := s.calls.count(func(c call) bool {
		return strings.HasSuffix(c.path, "/enter") && c.status == http.StatusBadRequest
	})
	// One enter a load: two joins and one refusal, or one more of either
	// for a load navigate made again because the network changed under it
	// (a join again keeps the place, as checked above).
	goodLoads := phone.loads + laptop.loads - badLoads
	if joined < 2 || joined > goodLoads || refused < 1 || refused > badLoads || s.enterRequests() != joined+refused {
		t.Errorf("enter requests: %d joined as %s, %d refused, %d in all; want 2 (up to %d loads), 1 (up to %d), their sum",
			joined, member, refused, s.enterRequests(), goodLoads, badLoads)
	}
	laptop.screenshot("second-browser")
}

// Redis freezes while a user waits: the page shows that it is reconnecting,
// keeps polling status (never entering again, which would send the user to
// the back) and carries on in the same place once Redis answers. The page
// also switches to Korean on request.
func TestReconnectKeepsPlace(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	ctr := redistest.NewContainer(t)
	opts := envconfig.SingleRedis(t, envconfig.Load(t, nil))
	settings := queue.Settings{RefillSize: 1, RefillInterval: 10 * time.Second, SessionTTL: time.Minute}
	s := newStack(t, stackOptions{settings: settings, redis: ctr.Client(t, opts)})
	b := newBrowser(t, chromium)
	s.fillWaiting("ahead", 4)

	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	member := s.member(b)
	before := s.status(member)
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
	// The room answers 503: the page says, in the page's language, that
	// it is briefly unavailable, that the place is kept, and when it
	// tries again.
	b.waitJS(10*time.Second, "the Korean unavailable notice",
		`/^대기열을 잠시 이용할 수 없습니다\. 순번은 그대로 유지되며, \d+초 후 자동으로 다시 시도합니다\.$/.test(document.getElementById('reconnecting-text').textContent)`)
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
	if got := s.member(b); got != member {
		t.Errorf("member after the outage = %q, want %q", got, member)
	}
	after := s.status(member)
	if after.Status != queue.Waiting && after.Status != queue.Entered {
		t.Fatalf("after the outage the user is %s", after.Status)
	}
	if after.Status == queue.Waiting && after.Position > before.Position {
		t.Fatalf("position went from %d to %d across the outage", before.Position, after.Position)
	}
}

// Far from the head the page's numbers come from a replica's snapshot of
// the line, not from Redis: the page says "about" and never shows the
// number rising while the user stays in line.
func TestFarBackPositionSaysAbout(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	// No ticks for an hour; a short abandon_after keeps the polls quick
	// (at most every 2 s) and the near-head zone at ten places.
	s := newStack(t, stackOptions{settings: queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Minute, AbandonAfter: 4 * time.Second}})
	s.fillWaiting("ahead", 60)
	b := newBrowser(t, chromium)
	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(joinDeadline, "an estimated position", `document.getElementById('position').textContent.startsWith('about ')`)
	// The scheduler's first tick may admit one of those ahead while they
	// join, so the exact position is Redis's, read now: no tick comes for
	// an hour.
	exact := s.status(s.member(b))
	if exact.Status != queue.Waiting || exact.Position < 60 {
		t.Fatalf("store: %+v, want waiting behind at least 59", exact)
	}
	if got, want := b.text("#position"), fmt.Sprintf("about %d", exact.Position); got != want {
		t.Fatalf("position shown %q, want %q", got, want)
	}
	b.screenshot("far-back-about")
}
