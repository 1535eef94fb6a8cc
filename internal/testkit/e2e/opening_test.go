package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// update changes the queue's settings in the store, as a PATCH does.
func (s *stack) update(u queue.Update) {
	s.t.Helper()
	if err := queue.NewInspector(s.store).UpdateSettings(context.Background(), s.queue, u); err != nil {
		s.t.Fatal(err)
	}
}

// enters are the enter requests that named member (by the cookie they sent
// or got), in the order answered.
func (s *stack) enters(member string) []call {
	return s.calls.matching(func(c call) bool {
		return c.method == http.MethodPost && strings.HasSuffix(c.path, "/enter") && c.member == member
	})
}

// jsSeconds is a JavaScript expression for a countdown's text ("1:05",
// "0:04") in seconds.
func jsSeconds(css string) string {
	return fmt.Sprintf(`%s.split(':').reduce((a, n) => a * 60 + Number(n), 0)`, jsText(css))
}

// drawOrder is the order a draw with the revealed seed (hex) gives users:
// ascending by HMAC-SHA256(seed, user), as the store's draw keys.
func drawOrder(t *testing.T, seedHex string, users []string) []string {
	t.Helper()
	seed, err := hex.DecodeString(seedHex)
	if err != nil || len(seed) != 32 {
		t.Fatalf("the revealed seed %q", seedHex)
	}
	out := slices.Clone(users)
	slices.SortFunc(out, func(a, b string) int { return bytes.Compare(queue.DrawKey(seed, a), queue.DrawKey(seed, b)) })
	return out
}

// A scheduled opening, end to end. A user who opens the page before the
// pre-queue window sees when the line opens for joining and a countdown,
// and the page joins by itself when the window opens: one refused enter
// (not_open) and then exactly one that is answered, not before the
// window. In the window the page shows the draw, with no number and a
// countdown to the opening; a second browser joins the draw too. At the
// opening the store draws the order (its seed and participant count are
// recorded), the pages get places and are admitted, in exactly the order
// the recorded seed gives.
func TestScheduledOpening(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1)})
	early := newBrowser(t, chromium)
	second := newBrowser(t, chromium)

	// Whole milliseconds, as the store keeps them. The page must show the
	// line not open before from, and two browsers join the draw before
	// opens: room for a loaded machine, where Chromium takes seconds to
	// start and to switch language (with 5 s and 8 s the line opened
	// before everyone had joined).
	from := time.UnixMilli(time.Now().Add(10 * time.Second).UnixMilli())
	opens := from.Add(15 * time.Second)
	s.update(queue.Update{PrequeueFrom: &from, OpensAt: &opens})
	page := s.url + "/q/" + s.queue
	hms := func(t time.Time) string { return t.Local().Format("15:04:05") }

	// Before the window: not open, a countdown, nothing to press.
	early.navigate(page)
	early.waitJS(10*time.Second, "the not-open state", jsState("notopen")+` && `+jsShown("#notopen-panel"))
	member := s.member(early)
	if st := early.text("#status-text"); st != "The line opens for joining at "+hms(from) {
		t.Errorf("#status-text = %q, want the time joining opens, %s", st, hms(from))
	}
	if title := early.text("#title"); title != "The line is not open yet" {
		t.Errorf("#title = %q", title)
	}
	want := "Everyone who joins between " + hms(from) + " and " + hms(opens) + " gets a place in a random order at " + hms(opens)
	if note := early.text("#notopen-draw"); !strings.HasPrefix(note, want) {
		t.Errorf("#notopen-draw = %q, want it to start %q", note, want)
	}
	// Counted on the server's clock as the page knows it from the Date
	// header, in whole seconds and never ahead: up to a second late.
	left := eval[int](early, jsSeconds("#notopen-countdown"))
	if until := time.Until(from); left < 1 || time.Duration(left)*time.Second > until+2*time.Second {
		t.Errorf("countdown %d s with %v to go", left, until)
	}
	early.waitJS(5*time.Second, "the countdown to move", fmt.Sprintf(`%s < %d`, jsSeconds("#notopen-countdown"), left))
	if got := s.enters(member); len(got) != 1 || got[0].status != http.StatusForbidden {
		t.Fatalf("enter requests before the window: %+v; want one, answered 403 not_open", got)
	}
	if shown := eval[bool](early, `document.getElementById('waiting-panel').checkVisibility()`); shown {
		t.Error("the waiting panel shows before the line is open")
	}
	early.screenshot("not-open")

	// The window opens: the page joins the draw by itself.
	early.waitJS(15*time.Second, "the draw", jsState("waiting")+` && `+jsShown("#draw-box"))
	enters := s.enters(member)
	if len(enters) != 2 || enters[0].status != http.StatusForbidden || enters[1].status != http.StatusOK {
		t.Fatalf("enter requests: %+v; want one refused (not_open) and one answered", enters)
	}
	// Not before the window opened; how soon after is the machine's (the
	// page is due to ask at once: the wait above is for that).
	if at := enters[1].at; at.Before(from) {
		t.Errorf("the page entered at %v, before the window opened at %v", at, from)
	} else {
		t.Logf("the page entered %v after the window opened", at.Sub(from).Round(time.Millisecond))
	}
	if tk := s.status(member); tk.Status != queue.Waiting || tk.Position != 0 || !tk.OpensAt.Equal(opens) {
		t.Fatalf("store ticket in the window: %+v; want WAITING at position 0 in the draw at %v", tk, opens)
	}
	if title := early.text("#title"); title != "You are in the draw" {
		t.Errorf("#title = %q", title)
	}
	if txt := early.text("#draw-text"); txt != "At "+hms(opens)+" everyone here gets a place in a random order." {
		t.Errorf("#draw-text = %q", txt)
	}
	for _, css := range []string{"#position-box", "#ahead-stat", "#eta-stat", "#progress-wrap"} {
		if shown := eval[bool](early, fmt.Sprintf(`document.querySelector(%q).checkVisibility()`, css)); shown {
			t.Errorf("%s shows in the draw", css)
		}
	}
	if note := early.text("#auto-note"); note != "Please wait: you will be let in automatically, in order. Keep this page open." {
		t.Errorf("#auto-note = %q", note)
	}
	if st := early.text("#status-text"); !strings.HasSuffix(st, "; the draw is at "+hms(opens)) {
		t.Errorf("#status-text = %q, want the draw's time", st)
	}
	left = eval[int](early, jsSeconds("#draw-countdown"))
	if until := time.Until(opens); left < 1 || time.Duration(left)*time.Second > until+2*time.Second {
		t.Errorf("draw countdown %d s with %v to go", left, until)
	}
	early.waitJS(5*time.Second, "the draw countdown to move", fmt.Sprintf(`%s < %d`, jsSeconds("#draw-countdown"), left))
	early.screenshot("draw")

	// A second browser in the window, in Korean; and four users through
	// the store.
	second.navigate(page)
	second.waitJS(10*time.Second, "the draw in the second browser", jsState("waiting")+` && `+jsShown("#draw-box"))
	member2 := s.member(second)
	second.do("switch to Korean", chromedp.Click(chromedp.CSS("#lang-ko")))
	second.waitJS(5*time.Second, "Korean", `document.documentElement.lang === 'ko'`)
	if txt := second.text("#draw-text"); txt != hms(opens)+"에 이곳의 모든 분이 무작위 순서로 순번을 받습니다." {
		t.Errorf("#draw-text in Korean = %q", txt)
	}
	if note := second.text("#auto-note"); !strings.HasPrefix(note, "잠시만 기다리시면 순서대로 자동 접속됩니다.") {
		t.Errorf("#auto-note in Korean = %q", note)
	}
	second.screenshot("draw-korean")
	participants := []string{member, member2}
	for i := range 4 {
		u := fmt.Sprintf("drawn-%d", i)
		tk, err := s.store.Enter(context.Background(), s.queue, queue.Entry{Caller: queue.Caller{User: u}})
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status != queue.Waiting || tk.Position != 0 {
			t.Fatalf("store enter of %s in the window: %+v, want the draw", u, tk)
		}
		participants = append(participants, u)
	}
	if tk := s.status(member2); tk.Status != queue.Waiting || tk.Position != 0 {
		t.Fatalf("second browser's ticket: %+v, want the draw", tk)
	}
	if time.Now().After(opens) {
		t.Fatal("the test took too long: the line opened before everyone had joined the draw")
	}

	// The opening: the draw is made and recorded.
	wait.For(t, 30*time.Second, "the draw", func() (bool, string) {
		i := s.info()
		return i.DrawCount == int64(len(participants)), fmt.Sprintf("%d placed", i.DrawCount)
	})
	info := s.info()
	d, err := s.store.Draw(context.Background(), s.queue)
	if err != nil {
		t.Fatal(err)
	}
	if !info.DrawFor.Equal(opens) || len(d.Last.Seed) != 64 {
		t.Errorf("draw record: for %v, seed %q; want the opening %v and a seed", info.DrawFor, d.Last.Seed, opens)
	}
	placed := `(document.body.dataset.state === 'waiting' && !document.getElementById('draw-box').checkVisibility() &&
		Number(document.getElementById('position').textContent.replace(/,/g, '')) >= 1) || document.body.dataset.state === 'entered'`
	for _, b := range []*browser{early, second} {
		b.waitJS(10*time.Second, "a place in line or the turn", placed)
	}
	if eval[string](early, `document.body.dataset.state`) == "waiting" {
		early.screenshot("after-draw")
	}

	// Everyone is admitted, one a tick, in the order the seed gives.
	for _, b := range []*browser{early, second} {
		b.waitJS(30*time.Second, "the turn", jsState("entered")+` && !document.getElementById('turn').hidden`)
	}
	admitted := map[string]time.Time{}
	wait.For(t, 30*time.Second, "every participant admitted", func() (bool, string) {
		for _, u := range participants {
			if _, ok := admitted[u]; ok {
				continue
			}
			at, ok, err := s.store.Admission(context.Background(), s.queue, u)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				admitted[u] = at
			}
		}
		return len(admitted) == len(participants), fmt.Sprintf("%d of %d", len(admitted), len(participants))
	})
	order := slices.Clone(participants)
	slices.SortFunc(order, func(a, b string) int { return admitted[a].Compare(admitted[b]) })
	if want := drawOrder(t, d.Last.Seed, participants); !slices.Equal(order, want) {
		t.Errorf("admitted in the order %v; the seed %s gives %v", order, d.Last.Seed, want)
	}
	if n := s.enterRequests(); n != 3 {
		t.Errorf("%d enter requests, want 3 (one refused and one answered for the early page, one for the second)", n)
	}
}
