package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// names returns prefix-0 … prefix-(n-1).
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// enterLine enters users through the store, in order. The first ones may
// go straight in while the bucket has tokens; once one waits, every later
// one must wait too.
func (s *stack) enterLine(users ...string) {
	s.t.Helper()
	waited := false
	for _, u := range users {
		tk, err := s.store.Enter(context.Background(), s.queue, queue.Entry{Caller: queue.Caller{User: u}})
		if err != nil {
			s.t.Fatal(err)
		}
		if tk.Status != queue.Waiting && (waited || tk.Status != queue.Entered) {
			s.t.Fatalf("store enter of %s: %+v, want WAITING", u, tk)
		}
		waited = waited || tk.Status == queue.Waiting
	}
}

// keepPolling asks for the status of users every half second until the
// test ends, as the pages of people who stay do: their places are heard
// from.
func (s *stack) keepPolling(users []string) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, u := range users {
				if _, err := s.store.Status(context.Background(), s.queue, queue.Caller{User: u}); err != nil {
					s.t.Errorf("keep polling %s: %v", u, err)
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	// Registered after the stack's cleanups, so it runs before them.
	s.t.Cleanup(func() {
		close(stop)
		wg.Wait()
	})
}

// abandonedSoFar is the number of places the ticks have dropped as
// abandoned, by the history (one tick behind).
func (s *stack) abandonedSoFar() int64 {
	s.t.Helper()
	points, err := queue.NewInspector(s.store).History(context.Background(), s.queue)
	if err != nil {
		s.t.Fatal(err)
	}
	var n int64
	for _, p := range points {
		n += p.Abandoned
	}
	return n
}

// lifecycle freezes the page (its timers and tasks stop, as in a tab the
// browser froze in the background) or makes it active again.
func (b *browser) lifecycle(state page.SetWebLifecycleStateState) {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, page.SetWebLifecycleState, page.SetWebLifecycleStateParams{State: state}); err != nil {
		b.t.Fatalf("set the page %s: %v", state, err)
	}
}

// A page frozen for longer than abandon_after while the line reaches it is
// dropped. Once it runs again it says why, and does not join again by
// itself; "Join again at the back" (clicked twice) enters once, at the
// back of the line, with the same place credential.
func TestAbandonedPlaceIsReleased(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	settings := fastTicks(1)
	settings.AbandonAfter = 3 * time.Second
	s := newStack(t, stackOptions{settings: settings})
	b := newBrowser(t, chromium)
	// People ahead who stay: the line reaches the page after it has been
	// silent for longer than abandon_after. The line is paused until the
	// page is frozen: a loaded machine may take longer to start the page
	// than the line takes to admit eight, and the page would then be let
	// in at its enter.
	paused, resumed := true, false
	s.update(queue.Update{Paused: &paused})
	ahead := names("ahead", 8)
	s.enterLine(ahead...)
	s.keepPolling(ahead)

	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	member := s.member(b)
	if p := b.number("#position"); p < 2 {
		t.Fatalf("position %d; want people ahead", p)
	}
	if note := b.text("#auto-note"); note != "Please wait: you will be let in automatically, in order. Keep this page open." {
		t.Errorf("#auto-note = %q", note)
	}

	frozenAt := time.Now()
	b.lifecycle(page.SetWebLifecycleStateStateFrozen)
	s.update(queue.Update{Paused: &resumed})
	// Only the history is read meanwhile: a status call would hear from
	// the place.
	wait.For(t, 30*time.Second, "the line to drop the silent page", func() (bool, string) {
		n := s.abandonedSoFar()
		return n >= 1, fmt.Sprintf("%d dropped", n)
	})
	frozen := time.Since(frozenAt)
	b.lifecycle(page.SetWebLifecycleStateStateActive)
	b.waitJS(10*time.Second, "the released state", jsState("released")+` && `+jsShown("#released"))
	t.Logf("frozen for %v", frozen)

	if tk := s.status(member); tk.Status != queue.NotWaiting || tk.Reason != queue.ReasonAbandoned {
		t.Fatalf("store ticket after the drop: %+v, want NOT_WAITING, abandoned", tk)
	}
	if n := s.abandonedSoFar(); n != 1 {
		t.Errorf("%d places dropped, want 1 (the page's; the others polled)", n)
	}
	if title := b.text("#released-title"); title != "Your place was released" {
		t.Errorf("#released-title = %q", title)
	}
	if body := b.text("#released-text"); body != "We didn't hear from this page for a while, so your place was released. "+
		"This happens when the page is closed, or the device sleeps, when the line reaches you." {
		t.Errorf("#released-text = %q", body)
	}
	if btn := b.text("#rejoin"); btn != "Join again at the back" {
		t.Errorf("#rejoin = %q", btn)
	}
	if st := b.text("#status-text"); st != "Your place was released" {
		t.Errorf("#status-text = %q", st)
	}
	if shown := eval[bool](b, `document.getElementById('waiting-panel').checkVisibility()`); shown {
		t.Error("the waiting panel still shows")
	}
	b.screenshot("released")

	// People who arrive later and stay, so the line is still there when
	// the user joins again: paused from now on (ticks go on, admitting
	// nobody), or a loaded machine, slow through the steps below, lets
	// them all in first and the page joins again straight to its turn.
	s.update(queue.Update{Paused: &paused})
	later := names("later", 12)
	s.enterLine(later...)
	s.keepPolling(later)

	// Ticks pass: the page asks nothing and enters nobody by itself.
	polls := s.statusCalls(member)
	since := s.info().LastTickAt
	wait.For(t, 30*time.Second, "three ticks after the release", func() (bool, string) {
		n := s.ticksAfter(since)
		return n >= 3, fmt.Sprintf("%d ticks", n)
	})
	if n := s.enterRequests(); n != 1 {
		t.Errorf("%d enter requests after the release, want 1: the page must not rejoin by itself", n)
	}
	if n := s.statusCalls(member); n != polls {
		t.Errorf("%d status requests after the release, want none", n-polls)
	}
	if st := eval[string](b, `document.body.dataset.state`); st != "released" {
		t.Errorf("state %q three ticks after the release", st)
	}

	b.do("switch to Korean", chromedp.Click(chromedp.CSS("#lang-ko")))
	b.waitJS(5*time.Second, "Korean", `document.documentElement.lang === 'ko'`)
	if title := b.text("#released-title"); title != "대기 순번이 해제되었습니다" {
		t.Errorf("#released-title in Korean = %q", title)
	}
	if btn := b.text("#rejoin"); btn != "맨 뒤에서 다시 줄 서기" {
		t.Errorf("#rejoin in Korean = %q", btn)
	}
	b.screenshot("released-korean")
	b.do("switch to English", chromedp.Click(chromedp.CSS("#lang-en")))

	// Join again, with a double click: one enter, at the back.
	b.do("join again twice", chromedp.Evaluate[chromedp.Void](
		`document.getElementById('rejoin').click(); document.getElementById('rejoin').click();`))
	b.waitJS(30*time.Second, "the waiting state after joining again", jsState("waiting"))
	if n := s.enterRequests(); n != 2 {
		t.Errorf("%d enter requests after joining again, want 2", n)
	}
	if got := s.member(b); got != member {
		t.Errorf("joined again as %q, want the same place credential's %q", got, member)
	}
	tk := s.status(member)
	if tk.Status != queue.Waiting || tk.Position != tk.Waiting {
		t.Errorf("after joining again the store has %+v; want WAITING at the back", tk)
	}
	if p := b.number("#position"); p < tk.Position {
		t.Errorf("page position %d, the store's %d", p, tk.Position)
	}
	b.screenshot("joined-again")
}

// A background tab that still polls keeps its place. The page is frozen
// again and again, each time for less than abandon_after and then active
// until it has polled, for twice abandon_after in all, while the line
// moves past silent users ahead of it: they are dropped, it is not, and it
// is admitted in its turn. Then the silent users behind it are dropped too.
func TestPollingBackgroundTabKeepsPlace(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	// Frozen for 2 s, the page has 14 s after each thaw to be heard from
	// again, of which it is told to wait up to 8 s (abandon_after/2) when
	// an answer reached it frozen: room for a loaded machine. With 8 s
	// (2 s to spare), a page beside a compiler on two cores was silent for
	// 10.9 s and dropped.
	const abandonAfter = 16 * time.Second
	const frozenFor = 2 * time.Second
	settings := fastTicks(1)
	settings.AbandonAfter = abandonAfter
	s := newStack(t, stackOptions{settings: settings})
	b := newBrowser(t, chromium)

	// The line ahead: people who stay, with a silent one after each. The
	// first few are all present, so the silent ones have been silent for
	// longer than abandon_after when the line reaches them.
	lead := names("lead", 24) // present for longer than abandon_after at one a second
	s.enterLine(lead...)
	var keep, silent []string
	for i := range 15 {
		keep = append(keep, fmt.Sprintf("keep-%d", i))
		silent = append(silent, fmt.Sprintf("silent-%d", i))
		s.enterLine(keep[i], silent[i])
	}
	s.keepPolling(append(append([]string(nil), lead...), keep...))

	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	member := s.member(b)
	behind := names("behind", 2)
	s.enterLine(behind...)
	start := b.number("#position")

	// What the page asks, answered: its status, or far from the head the
	// line's document (only this page reads it here; it is heard
	// near the head, where a silent place is dropped, by its status).
	polls := func() []call {
		return s.calls.matching(func(c call) bool {
			return c.method == http.MethodGet && c.status == http.StatusOK &&
				(strings.HasSuffix(c.path, "/status") && c.member == member || strings.HasSuffix(c.path, "/line"))
		})
	}
	wait.For(t, 30*time.Second, "the page's first poll", func() (bool, string) {
		return len(polls()) > 0, "no poll"
	})
	began := time.Now()
	var maxGap time.Duration
	cycles := 0
	// Cycles for twice abandon_after, or until the line has brought the
	// page near the head: the line moves by ticks, the cycles by how fast
	// the machine freezes and thaws a page, and under load the page was
	// let in before twice abandon_after had passed. Near is 20 ahead: the
	// line passes up to two places a second (a silent one is dropped for
	// free), and under load one cycle took 10 s. Its rank is read from
	// Redis: a status call would be its page confirming it.
	ahead := func() int64 {
		r, err := s.rdb.ZRank(context.Background(), rediskeys.Waiting(s.queue), member).Result()
		if err != nil {
			return -1
		}
		return r
	}
	for time.Since(began) < 2*abandonAfter && ahead() >= 20 {
		// The page has just polled (before the first cycle, or right after
		// the last thaw): its place is heard from. Freeze it for less than
		// abandon_after; it must not poll meanwhile, and must once it runs.
		if st := eval[string](b, `document.body.dataset.state`); st != "waiting" {
			t.Fatalf("cycle %d: the page is %q", cycles, st)
		}
		before := polls()
		b.lifecycle(page.SetWebLifecycleStateStateFrozen)
		frozenAt := time.Now()
		time.Sleep(frozenFor) // a deliberate duration: frozen for less than abandon_after
		// A poll sent before the freeze may be answered during it (under
		// load it was), and may even reach the server after the freeze was
		// made (the recorder stamps arrival, not sending; under load one
		// arrived 3 ms after): the page has one poll in flight at most, so
		// one arrival soon after the freeze is that one. A second, or one
		// later on, is the frozen page polling.
		var late []time.Time
		for _, c := range polls() {
			if c.started.After(frozenAt) {
				late = append(late, c.started)
			}
		}
		if len(late) > 1 || len(late) == 1 && late[0].Sub(frozenAt) > frozenFor/2 {
			t.Fatalf("cycle %d: the frozen page polled (requests at %v, frozen at %v)", cycles, late, frozenAt)
		}
		before = polls()
		b.lifecycle(page.SetWebLifecycleStateStateActive)
		// The thawed page asks at once, unless a poll sent before the
		// freeze was answered during it: the page reads that answer on the
		// thaw and asks again when it says, up to abandon_after/2 later
		// (queue.PollAfter). So how soon after the thaw is not the page's
		// to keep; that its place is heard from in time is, and the store
		// and the page's state say so below and at each cycle.
		wait.For(t, time.Minute, "a poll after the thaw", func() (bool, string) {
			return len(polls()) > len(before), fmt.Sprintf("%d polls", len(polls()))
		})
		after := polls()
		maxGap = max(maxGap, after[len(before)].at.Sub(before[len(before)-1].at))
		cycles++
	}
	t.Logf("%d cycles in %v; the longest silence %v (abandon_after %v)", cycles, time.Since(began), maxGap, abandonAfter)
	if maxGap < frozenFor {
		t.Errorf("the longest time between two polls was %v; the page was frozen for %v", maxGap, frozenFor)
	}

	// The page kept its place and has moved up, or (a last cycle on a
	// loaded machine may take ten seconds) was let in in its turn; never
	// dropped. The line has passed, and dropped, silent users ahead of it.
	tk := s.status(member)
	if tk.Status != queue.Entered && (tk.Status != queue.Waiting || tk.Position >= start) {
		t.Fatalf("after %d cycles the store has %+v; want WAITING ahead of the first position %d, or ENTERED", cycles, tk, start)
	}
	if st := eval[string](b, `document.body.dataset.state`); st != "waiting" && st != "entered" {
		t.Errorf("the page is %q after the cycles", st)
	}
	// A silent place that entered near the head (and so was heard then)
	// is dropped as the line reaches it; one that entered further back is
	// set aside (held, out of the line) to confirm, and dropped
	// abandon_after later. Either
	// way it is never admitted. (Its fate is read from Redis: a status
	// call would be its page confirming it.)
	passed := 0
	for i := 0; i+1 < len(keep) && s.fate(keep[i+1]) == "entered"; i++ {
		// keep-(i+1) stands right behind silent-i: the line passed it.
		if f := s.fate(silent[i]); f != queue.ReasonAbandoned && f != "held" {
			t.Errorf("%s, passed by the line: %q, want abandoned (or held)", silent[i], f)
		}
		passed++
	}
	if passed < 3 {
		t.Errorf("the line passed %d silent users while the page cycled, want at least 3", passed)
	}
	b.screenshot("kept-place")

	// The page is admitted in its turn; the silent users behind it are
	// dropped when the line reaches them.
	b.waitJS(40*time.Second, "the turn", jsState("entered")+` && !document.getElementById('turn').hidden`)
	if tk := s.status(member); tk.Status != queue.Entered {
		t.Errorf("store status %s after the turn, want ENTERED", tk.Status)
	}
	dropped := append(append([]string(nil), silent...), behind...)
	wait.For(t, abandonAfter+10*time.Second, "the silent users to be dropped", func() (bool, string) {
		n := s.abandonedSoFar()
		return n >= int64(len(dropped)), fmt.Sprintf("%d dropped", n)
	})
	if n := s.abandonedSoFar(); n != int64(len(dropped)) {
		t.Errorf("%d places dropped, want %d (the silent ones only)", n, len(dropped))
	}
	for _, u := range dropped {
		if f := s.fate(u); f != queue.ReasonAbandoned {
			t.Errorf("%s: %q, want abandoned", u, f)
		}
	}
	for _, u := range append(append([]string(nil), lead...), keep...) {
		if tk := s.status(u); tk.Status != queue.Entered {
			t.Errorf("%s, who stayed: %s, want ENTERED", u, tk.Status)
		}
	}
	if n := s.enterRequests(); n != 1 {
		t.Errorf("%d enter requests, want 1", n)
	}
}
