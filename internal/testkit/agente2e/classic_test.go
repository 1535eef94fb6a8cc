package agente2e

import (
	"fmt"
	"testing"
)

// The classic form, loaded by a plain <script src> under the shop's CSP,
// sets window.waitroom, which talks to the waitroom it was loaded from:
// a wait for the shop's queue shows the place.
func TestClassicScript(t *testing.T) {
	s := newSite(t, still)
	s.fill(1)
	b := newBrowser(t)
	tb := b.tab(s.shop + "/")
	tb.waitJS("the shop", `document.readyState === 'complete'`)
	eval[bool](tb, fmt.Sprintf(`(() => { const el = document.createElement('script'); el.src = %q; document.head.appendChild(el); return true; })()`,
		s.wr+"/agent/v1/waitroom.classic.js"))
	tb.waitJS("window.waitroom", `!!window.waitroom && typeof window.waitroom.wait === 'function'`)
	if code := evalAsync[string](tb, `window.waitroom.wait({ queue: 'no such/queue' }).then(() => 'resolved', (e) => e.code)`); code != "invalid_queue" {
		t.Errorf("a bad queue name: %q", code)
	}
	eval[bool](tb, fmt.Sprintf(`(() => { window.waitroom.wait({ queue: %q }); return true; })()`, s.queue))
	tb.waitJS("the place", fmt.Sprintf(`%s && %s === '2'`, dialogOpen, agentText("position")))
}
