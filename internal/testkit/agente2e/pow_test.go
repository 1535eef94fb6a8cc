package agente2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/demo"
)

// A queue that asks for proof of work: the agent solves it before it
// enters, in a worker made from waitroom's pow-worker.js (a blob, since a
// worker must be of the page's origin), or, when the site's CSP allows no
// blob worker, on the page's own thread; either way it takes its place.
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
			tb := b.tab(s.shop + "/")
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
			if n := s.count("GET", "/challenge"); n != 1 {
				t.Errorf("%d challenges fetched, want 1", n)
			}
			if n := s.count("POST", "/enter"); n != 2 {
				t.Errorf("%d enters, want 2 (refused, then with the solution)", n)
			}
		})
	}
}
