package agente2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// wait({inviteCode}) sends the code with its first enter: a wrong one
// rejects with invalid_code and makes no place; the right one puts the
// place in the code's lane, and the dialog says so.
func TestAgentInviteCode(t *testing.T) {
	s := newSite(t, still)
	lanes := queue.Lanes{{Name: "vip", Share: 0.5}}
	ctx := context.Background()
	if err := queue.NewInspector(s.store).UpdateSettings(ctx, s.queue, queue.Update{Lanes: &lanes}); err != nil {
		t.Fatal(err)
	}
	digests, err := s.codes.Digests(s.queue, []string{"AGENT-CODE-0001"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := queue.NewInspector(s.store).AddCodes(ctx, s.queue, queue.CodeBatch{Lane: "vip", Uses: 1}, digests); err != nil {
		t.Fatal(err)
	}
	s.fill(3)
	b := newBrowser(t)
	tb := b.tab(s.shop + "/")
	tb.waitJS("the shop", `document.readyState === 'complete'`)
	eval[bool](tb, fmt.Sprintf(`(() => { const el = document.createElement('script'); el.src = %q; document.head.appendChild(el); return true; })()`,
		s.wr+"/agent/v1/waitroom.classic.js"))
	tb.waitJS("window.waitroom", `!!window.waitroom && typeof window.waitroom.wait === 'function'`)

	before := s.waiting()
	code := evalAsync[string](tb, fmt.Sprintf(`window.waitroom.wait({ queue: %q, inviteCode: 'WRONG-CODE-0000' }).then(() => 'resolved', (e) => e.code)`, s.queue))
	if code != "invalid_code" {
		t.Fatalf("a wrong code: %q, want invalid_code", code)
	}
	if got := s.waiting(); got != before {
		t.Fatalf("a wrong code changed the line: %d waiting, was %d", got, before)
	}

	eval[bool](tb, fmt.Sprintf(`(() => { window.waitroom.wait({ queue: %q, inviteCode: 'agent code 0001' }); return true; })()`, s.queue))
	tb.waitJS("first in the vip line", fmt.Sprintf(`%s && %s === '1' && %s.includes('vip')`, dialogOpen, agentText("position"), agentText("notice")))
}
