package agente2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// words are the waiting page's English catalog, which the agent speaks.
func words(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../../../web/static/i18n/waiting/en.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func (s *site) update(u queue.Update) {
	s.t.Helper()
	if err := queue.NewInspector(s.store).UpdateSettings(context.Background(), s.queue, u); err != nil {
		s.t.Fatal(err)
	}
}

// The dialog's states are the waiting page's, in its words: a line not
// open yet, a paused line, the room away (the place kept), a full line.
func TestStatesAsTheWaitingPage(t *testing.T) {
	w := words(t)
	s := newSite(t, still)
	s.fill(1)
	b := newBrowser(t)
	b.expect("503") // the outage's answers, which Chromium logs
	tb := b.tab(s.shop + "/")
	tb.waitJS("the shop", `!!document.getElementById('book') && document.readyState === 'complete'`)
	tb.click(`button.add[data-train="KTX 101 · 06:00"]`)

	// Not open yet: the opening's countdown, then Leave ends the wait.
	now := time.Now()
	from, opens := now.Add(time.Hour), now.Add(2*time.Hour)
	s.update(queue.Update{PrequeueFrom: &from, OpensAt: &opens})
	tb.click(`#book`)
	tb.waitJS("not open yet", fmt.Sprintf(`%s && %s === %q`, dialogOpen, agentText("title"), w["notOpenTitle"]))
	if c := tb.text(agentText("countdown")); !strings.HasPrefix(c, "59:") && !strings.HasPrefix(c, "1:00:") {
		t.Errorf("the countdown shows %q", c)
	}
	if st := tb.text(agentText("status")); !strings.HasPrefix(st, "The line opens for joining at ") {
		t.Errorf("not open: %q", st)
	}
	tb.clickAgent("leave")
	tb.clickAgent("leave")
	tb.waitJS("the wait given up", `document.getElementById('result').textContent === 'You left the line. Your cart is kept.'`)
	var zero time.Time
	s.update(queue.Update{PrequeueFrom: &zero, OpensAt: &zero})

	tb.click(`#book`)
	tb.waitJS("a place", fmt.Sprintf(`%s && %s === '2'`, dialogOpen, agentText("position")))

	// Paused: no wait promised, the place kept.
	paused := true
	s.update(queue.Update{Paused: &paused})
	tb.waitJS("paused", fmt.Sprintf(`%s === %q && %s === %q`, agentText("banner"), w["paused"], agentText("eta"), w["etaPaused"]))
	if st := tb.text(agentText("status")); st != "2 people are waiting; the line is paused" {
		t.Errorf("paused: %q", st)
	}
	paused = false
	s.update(queue.Update{Paused: &paused})
	tb.waitJS("resumed", fmt.Sprintf(`%s === '' && %s !== %q`, agentText("banner"), agentText("eta"), w["etaPaused"]))

	// The room away: the place is kept and said to be, and comes back.
	s.away.Store(true)
	tb.waitJS("the room away", fmt.Sprintf(`%s.startsWith('The waiting room is briefly unavailable. Your place is kept')`, agentText("banner")))
	if p := tb.text(agentText("position")); p != "2" {
		t.Errorf("the place while away: %q", p)
	}
	s.away.Store(false)
	tb.waitJS("the room back", fmt.Sprintf(`%s === '' && %s === '2'`, agentText("banner"), agentText("position")))
	if n := s.count("POST", "/enter"); n != 2 {
		t.Errorf("%d enters (the opening's refusal, then the place), want 2: the outage must not enter again", n)
	}

	// Another person, on a full line.
	two := 2
	s.update(queue.Update{MaxWaiting: &two})
	other := newBrowser(t).tab(s.shop + "/")
	other.waitJS("the shop", `!!document.getElementById('book') && document.readyState === 'complete'`)
	other.click(`button.add[data-train="KTX 103 · 07:00"]`)
	other.click(`#book`)
	other.waitJS("a full line", fmt.Sprintf(`%s && %s === %q`, dialogOpen, agentText("title"), w["fullTitle"]))
	if st := other.text(agentText("status")); !strings.HasPrefix(st, "Try again at ") || !strings.HasSuffix(st, "(local time).") {
		t.Errorf("full: %q", st)
	}
	if again := other.text(agentText("again")); again != w["fullRetry"] {
		t.Errorf("the full line's button: %q", again)
	}
}
