package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/trust/invite"
	"github.com/waitroom/waitroom/internal/web/httpapi"
)

// A person waiting in the general line types an invitation code in "I
// have an invitation code": a wrong one is refused on the page and the
// place is kept; the right one moves the place into the code's lane (the
// page says which line, and its position counts the lane's); the same
// code again, now spent, is refused.
func TestInvitationCodeOnTheWaitingPage(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	codes, err := invite.New(newSecret())
	if err != nil {
		t.Fatal(err)
	}
	lanes := queue.Lanes{{Name: "vip", Share: 0.5}}
	s := newStack(t, stackOptions{settings: queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Minute},
		update: &queue.Update{Lanes: &lanes}, api: func(o *httpapi.Options) { o.Codes = codes }})
	s.fillWaiting("ahead", 4)
	digests, err := codes.Digests(s.queue, []string{"GUEST-CODE-0001"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := queue.NewInspector(s.store).AddCodes(context.Background(), s.queue, queue.CodeBatch{Lane: "vip", Uses: 1}, digests); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, chromium)
	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(joinDeadline, "waiting in the general line", jsState("waiting"))
	before := s.member(b)
	if p := b.number("#position"); p < 4 {
		t.Fatalf("position %d, want behind the 4 ahead", p)
	}

	useCode := func(code string) {
		if !eval[bool](b, `document.getElementById('code-use').open`) {
			b.do("open the code's field", chromedp.Click(chromedp.CSS("#code-use summary")))
		}
		b.do("type the code "+code,
			chromedp.SetValue(chromedp.CSS("#code-input"), code),
			chromedp.Click(chromedp.CSS("#code-submit")))
	}
	asked := s.statusCalls(before)
	useCode("WRONG-CODE-0000")
	b.waitJS(10*time.Second, "the wrong code refused", `!document.getElementById('code-note').hidden && document.getElementById('code-note').textContent.includes('not valid')`)
	b.screenshot("code-invalid")
	if got := s.member(b); got != before {
		t.Fatalf("a wrong code changed the place: %q, was %q", got, before)
	}
	if tk := s.status(before); tk.Status != queue.Waiting {
		t.Fatalf("the place after a wrong code: %+v", tk)
	}
	// The page asks for its place at once: the refusal changed nothing.
	for deadline := time.Now().Add(10 * time.Second); s.statusCalls(before) <= asked; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no status asked after the wrong code")
		}
	}

	useCode("guest code 0001") // as a person types it
	b.waitJS(10*time.Second, "the code accepted", `document.getElementById('code-note').textContent.includes('vip')`)
	b.waitJS(10*time.Second, "first in the vip line", `document.body.dataset.state === 'waiting' && document.getElementById('position').textContent.trim() === '1'`)
	b.screenshot("code-accepted")
	after := s.member(b)
	if queue.LaneOf(after) != "vip" || !strings.HasSuffix(after, before) {
		t.Fatalf("member %q after the code, want the vip lane's member of %q", after, before)
	}
	if tk := s.status(after); tk.Status != queue.Waiting || tk.Position != 1 {
		t.Fatalf("the lane's place: %+v", tk)
	}

	useCode("GUEST-CODE-0001")
	b.waitJS(10*time.Second, "the spent code refused", `document.getElementById('code-note').textContent.includes('not valid')`)
	if got := s.member(b); got != after {
		t.Fatalf("a spent code changed the place: %q", got)
	}
}
