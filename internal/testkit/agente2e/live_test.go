package agente2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// A screen reader hears a move up at most every 30 s, and the turn at
// once: in the agent's dialog and on the waiting page. The page's clock
// (Date.now) is one the test moves forward, so 30 s pass in an instant;
// every change of the live region is logged with that clock's time.

// fakeClock makes Date.now a clock the test moves (__advance(ms)), and
// __watchLive(el) logs each change of el's text as [time, text].
const fakeClock = `(() => {
  const real = Date.now.bind(Date);
  let ahead = 0;
  Date.now = () => real() + ahead;
  window.__advance = (ms) => { ahead += ms; return true; };
  window.__live = [];
  window.__watchLive = (el) => {
    if (el.textContent) window.__live.push([Date.now(), el.textContent]);
    new MutationObserver(() => window.__live.push([Date.now(), el.textContent]))
      .observe(el, { childList: true, characterData: true, subtree: true });
    return true;
  };
})()`

// liveEveryMS is the bound both promise.
const liveEveryMS = 30000

// clockTab opens url in a new tab of b with the fake clock.
func (b *browser) clockTab(url string) *tab {
	b.t.Helper()
	return b.tabWith(url, fakeClock)
}

// tabWith opens url in a new tab of b whose documents run scripts first.
func (b *browser) tabWith(url string, scripts ...string) *tab {
	b.t.Helper()
	tb := b.tab("about:blank")
	for _, js := range scripts {
		if _, err := chromedp.Call(tb.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: js}); err != nil {
			b.t.Fatal(err)
		}
	}
	tb.do("navigate to "+url, chromedp.Navigate(url))
	return tb
}

type liveEntry struct {
	at   int64
	text string
}

// liveLog is what the live region said, and when by the page's clock.
func liveLog(tb *tab) []liveEntry {
	tb.t.Helper()
	var raw [][2]any
	if err := json.Unmarshal([]byte(eval[string](tb, `JSON.stringify(window.__live)`)), &raw); err != nil {
		tb.t.Fatal(err)
	}
	var out []liveEntry
	for _, r := range raw {
		at, _ := r[0].(float64)
		text, _ := r[1].(string)
		if text != "" {
			out = append(out, liveEntry{int64(at), text})
		}
	}
	return out
}

// checkLive checks the log against the numbers the test expects told
// (each once, in order) and the turn last (the text it starts with); and
// that no two moves were told within the bound.
func checkLive(t *testing.T, log []liveEntry, numbers []int, turn string) {
	t.Helper()
	var want []string
	for _, n := range numbers {
		want = append(want, fmt.Sprintf("You are number %d in line", n))
	}
	if turn != "" {
		want = append(want, turn)
	}
	var got []string
	for i, e := range log {
		if turn != "" && i == len(log)-1 && strings.HasPrefix(e.text, turn) {
			e.text = turn // the agent adds the state's words
		}
		got = append(got, e.text)
		if i > 0 && strings.HasPrefix(e.text, "You are number") && e.at-log[i-1].at < liveEveryMS {
			t.Errorf("%q told %d ms after %q", e.text, e.at-log[i-1].at, log[i-1].text)
		}
	}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("the live region said %q, want %q", got, want)
	}
}

func TestLiveRegionBound(t *testing.T) {
	t.Run("agent", func(t *testing.T) {
		s := newSite(t, still)
		s.fill(4)
		b := newBrowser(t)
		tb := b.clockTab(s.shop + "/")
		tb.waitJS("the shop", `!!document.getElementById('book') && document.readyState === 'complete'`)
		tb.click(`button.add[data-train="KTX 101 · 06:00"]`)
		tb.click(`#book`)
		tb.waitJS("the dialog at number 5", fmt.Sprintf(`%s && %s === '5'`, dialogOpen, agentText("position")))
		eval[bool](tb, `window.__watchLive(document.querySelector('[data-waitroom-agent]').shadowRoot.getElementById('live'))`)
		tb.waitJS("number 5 told", fmt.Sprintf(`%s === 'You are number 5 in line'`, agentText("live")))

		moveTo := func(n int) {
			t.Helper()
			s.tickOnce()
			tb.waitJS(fmt.Sprintf("the dialog at number %d", n), fmt.Sprintf(`%s === '%d'`, agentText("position"), n))
		}
		moveTo(4) // within 30 s of 5: shown, not told
		eval[bool](tb, fmt.Sprintf(`window.__advance(%d)`, liveEveryMS+1000))
		moveTo(3) // 31 s on: told
		moveTo(2) // not told
		s.admitAll()
		tb.waitJS("the turn told outside the closed dialog", `(() => { const h = document.querySelector('[data-waitroom-agent]'); const a = h && h.shadowRoot.getElementById('after'); return !!a && a.textContent === "It's your turn"; })()`)
		// The turn is told in the dialog, then in the region outside it
		// once it closed (a modal dialog makes all else inert).
		checkLive(t, liveLog(tb), []int{5, 3}, "It's your turn")
		if after := tb.text(`document.querySelector('[data-waitroom-agent]').shadowRoot.getElementById('after').textContent`); after != "It's your turn" {
			t.Errorf("the turn: %q", after)
		}
	})

	t.Run("waiting page", func(t *testing.T) {
		s := newSite(t, still)
		s.fill(4)
		b := newBrowser(t)
		tb := b.clockTab(s.wr + "/q/" + s.queue + "?lang=en")
		atNumber := func(n int) string {
			return fmt.Sprintf(`document.body.dataset.state === 'waiting' && document.getElementById('position').textContent === '%d'`, n)
		}
		tb.waitJS("the waiting page at number 5", atNumber(5))
		eval[bool](tb, `window.__watchLive(document.getElementById('live'))`)
		tb.waitJS("number 5 told", `document.getElementById('live').textContent === 'You are number 5 in line'`)
		moveTo := func(n int) {
			t.Helper()
			s.tickOnce()
			tb.waitJS(fmt.Sprintf("the page at number %d", n), atNumber(n))
		}
		moveTo(4)
		eval[bool](tb, fmt.Sprintf(`window.__advance(%d)`, liveEveryMS+1000))
		moveTo(3)
		moveTo(2)
		s.admitAll()
		tb.waitJS("the turn told", `document.getElementById('live').textContent === "It's your turn"`)
		checkLive(t, liveLog(tb), []int{5, 3}, "It's your turn")
	})
}
