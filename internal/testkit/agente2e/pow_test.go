package agente2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/demo"
)

// recordCheck logs what the agent's dialog shows of the check, in
// window.__check: "<bar value> <status>" while the bar is shown, "- <status>"
// when not, each change once.
const recordCheck = `(() => {
  window.__check = [];
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    const root = attach.call(this, init);
    new MutationObserver(() => {
      const box = root.getElementById('check'), bar = root.getElementById('check-bar'), st = root.getElementById('status');
      if (!box || !bar || !st) return;
      const v = (box.hidden ? '-' : String(bar.value)) + ' ' + st.textContent;
      if (window.__check[window.__check.length - 1] !== v) window.__check.push(v);
    }).observe(root, { subtree: true, childList: true, characterData: true, attributes: true });
    return root;
  };
})()`

// A queue that asks for proof of work: the agent solves it before it
// enters, in a worker made from waitroom's pow-worker.js (a blob, since a
// worker must be of the page's origin), or, when the site's CSP allows no
// blob worker, on the page's own thread; either way it shows the check's
// progress in its dialog and takes its place.
func TestProofOfWork(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			settings := still
			settings.Price.MaxBits = queue.MaxChallengeDifficulty
			s := newSiteWith(t, settings, demo.ShopOptions{NoBlobWorkers: strict})
			s.fill(1) // before the price: the store's enters here bring no proof
			bits := 14
			if err := queue.NewInspector(s.store).UpdateSettings(context.Background(), s.queue, queue.Update{ChallengeDifficulty: &bits}); err != nil {
				t.Fatal(err)
			}
			b := newBrowser(t)
			if strict {
				b.expect("worker") // the CSP refusal Chromium logs
			}
			tb := b.tabWith(s.shop+"/", recordCheck)
			tb.waitJS("the shop", `!!document.getElementById('book') && document.readyState === 'complete'`)
			eval[bool](tb, `(() => { window.__refused = ''; document.addEventListener('securitypolicyviolation', (e) => { window.__refused += e.effectiveDirective + ' '; }); return true; })()`)
			tb.click(`button.add[data-train="KTX 101 · 06:00"]`)
			tb.click(`#book`)
			tb.waitJS("a place after the check", fmt.Sprintf(`%s && %s === '2'`, dialogOpen, agentText("position")))
			// The strict page refused the worker, and nothing else.
			refused := eval[string](tb, `window.__refused`)
			if want := map[bool]string{false: "", true: "worker-src "}[strict]; refused != want {
				t.Errorf("CSP refusals %q, want %q", refused, want)
			}
			// The dialog showed the check's bar and words while it worked,
			// its bar never going back.
			seen := eval[[]string](tb, `window.__check`)
			last, shown := -1.0, false
			for _, v := range seen {
				pct, words, ok := strings.Cut(v, " ")
				if !ok || pct == "-" {
					continue
				}
				p, _ := strconv.ParseFloat(pct, 64)
				if p < last {
					t.Errorf("the bar went back: %q", seen)
				}
				last, shown = p, shown || strings.HasPrefix(words, "Checking your browser")
			}
			if !shown {
				t.Errorf("the dialog never showed the check's progress: %q", seen)
			}
			t.Logf("the dialog while checking: %q", seen)
			if n := s.count("GET", "/challenge"); n != 1 {
				t.Errorf("%d challenges fetched, want 1", n)
			}
			if n := s.count("POST", "/enter"); n != 2 {
				t.Errorf("%d enters, want 2 (refused, then with the solution)", n)
			}
		})
	}
}
