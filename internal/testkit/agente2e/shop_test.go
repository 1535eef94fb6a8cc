package agente2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// A still line: one admission per tick, and ticks only when the test
// makes them.
var still = queue.Settings{RefillSize: 1, RefillInterval: 300 * time.Millisecond, SessionTTL: time.Minute}

// The shop on another origin: a line forms, "Book" shows the place in a
// dialog (in English, and in Korean in a second tab of the same browser,
// the same place without a second enter), the dialog is a real modal
// dialog in the accessibility tree, admission resolves both tabs' waits
// and each books its own cart, unchanged, with the pass.
func TestShopBooksWithTheAgent(t *testing.T) {
	s := newSite(t, still)
	s.fill(3)
	b := newBrowser(t)

	en := b.tab(s.shop + "/")
	en.waitJS("the shop", `!!document.getElementById('book') && document.readyState === 'complete'`)
	en.click(`button.add[data-train="KTX 103 · 07:00"]`)
	en.click(`button.add[data-train="KTX 105 · 08:00"]`)
	cart := en.text(`document.getElementById('cart').innerText`)
	en.click(`#book`)
	en.waitJS("the dialog at number 4", fmt.Sprintf(`%s && %s === '4'`, dialogOpen, agentText("position")))
	for id, want := range map[string]string{"title": "You're in line", "pos-label": "Your number in line", "ahead": "3", "ahead-label": "People ahead of you", "waiting": "4"} {
		if got := en.text(agentText(id)); got != want {
			t.Errorf("en %s: %q, want %q", id, got, want)
		}
	}
	if eta := en.text(agentText("eta")); eta == "" || eta == "–" {
		t.Errorf("no wait shown: %q", eta)
	}

	// The same browser's second tab, in Korean: the same place.
	ko := b.tab(s.shop + "/?lang=ko")
	ko.waitJS("the Korean shop", `!!document.getElementById('book') && document.readyState === 'complete'`)
	ko.click(`button.add[data-train="KTX 101 · 06:00"]`)
	ko.click(`#book`)
	ko.waitJS("the Korean dialog at number 4", fmt.Sprintf(`%s && %s === '4'`, dialogOpen, agentText("position")))
	for id, want := range map[string]string{"title": "접속 대기 중입니다", "pos-label": "나의 대기 순번", "ahead-label": "내 앞 대기 인원", "ahead": "3"} {
		if got := ko.text(agentText(id)); got != want {
			t.Errorf("ko %s: %q, want %q", id, got, want)
		}
	}
	if n := s.count("POST", "/enter"); n != 1 {
		t.Errorf("%d enters from the shop's two tabs, want 1", n)
	}

	checkDialogAccessible(t, en)

	// The turn: both tabs' waits resolve, each books its own cart.
	s.admitAll()
	en.waitJS("the English tab booked", `document.getElementById('result').textContent.startsWith('Booked:')`)
	ko.waitJS("the Korean tab booked", `document.getElementById('result').textContent.startsWith('Booked:')`)
	if got := en.text(`document.getElementById('result').textContent`); got != "Booked: KTX 103 · 07:00, KTX 105 · 08:00" {
		t.Errorf("en booked %q", got)
	}
	if got := ko.text(`document.getElementById('result').textContent`); got != "Booked: KTX 101 · 06:00" {
		t.Errorf("ko booked %q", got)
	}
	if got := en.text(`document.getElementById('cart').innerText`); got != cart {
		t.Errorf("the cart was %q before the wait, %q after", cart, got)
	}
	// Focus is back where it was, and the turn is told outside the (now
	// closed) dialog.
	if id := en.text(`document.activeElement && document.activeElement.id`); id != "book" {
		t.Errorf("focus after the wait: %q, want the Book button", id)
	}
	en.waitJS("the turn told", fmt.Sprintf(`%s === "It's your turn"`, agentText("after")))
	if !hasNode(t, en, "status", "") || !hasNode(t, en, "", "It's your turn") {
		t.Error("the accessibility tree has no live region telling the turn")
	}
	if n := s.count("POST", "/enter"); n != 1 {
		t.Errorf("%d enters in all, want 1", n)
	}
	if n := s.count("POST", "/book"); n != 0 {
		t.Errorf("the shop's API calls reached waitroom: %d", n)
	}
}

// checkDialogAccessible reads the dialog from Chromium's accessibility
// tree: a modal dialog named by its title, a polite live region that told
// the position, focus inside, Tab kept inside, Escape asking first.
func checkDialogAccessible(t *testing.T, tb *tab) {
	t.Helper()
	nodes := axTree(t, tb)
	dlg := find(nodes, "dialog", "You're in line")
	if dlg == nil {
		t.Fatalf("no dialog named \"You're in line\" in the accessibility tree:\n%s", describe(nodes))
	}
	if prop(dlg, "modal") != "true" {
		t.Errorf("the dialog is not modal: %s", props(dlg))
	}
	if d := value(dlg.Description); !strings.Contains(d, "waiting") {
		t.Errorf("the dialog's description %q", d)
	}
	live := false
	for _, n := range nodes {
		if value(n.Role) == "status" && prop(n, "live") == "polite" {
			live = true
		}
	}
	if !live {
		t.Error("no polite live region (role status) in the dialog")
	}
	if got := tb.text(agentText("live")); got != "You are number 4 in line" {
		t.Errorf("the live region says %q", got)
	}
	// Outside the modal dialog, the page is inert: its Book button is
	// not in the tree as something to press.
	for _, n := range nodes {
		if value(n.Role) == "button" && value(n.Name) == "Book" && !n.Ignored {
			t.Error("the page's Book button is reachable behind the modal dialog")
		}
	}
	inDialog := `document.activeElement === document.querySelector('[data-waitroom-agent]') && !!document.querySelector('[data-waitroom-agent]').shadowRoot.activeElement`
	if !eval[bool](tb, inDialog) {
		t.Fatal("focus is not in the dialog")
	}
	for i := range 6 {
		tb.do("tab", chromedp.KeyEvent(kb.Tab))
		if !eval[bool](tb, inDialog) {
			t.Fatalf("focus left the dialog after %d Tab presses", i+1)
		}
	}
	tb.do("escape", chromedp.KeyEvent(kb.Escape))
	tb.waitJS("Escape asks first", fmt.Sprintf(`%s === 'Leave the line?' && %s`, agentText("title"), dialogOpen))
	if id := tb.text(`document.querySelector('[data-waitroom-agent]').shadowRoot.activeElement.id`); id != "stay" {
		t.Errorf("the question's focus is on %q, want the safe choice", id)
	}
	tb.do("escape again", chromedp.KeyEvent(kb.Escape))
	tb.waitJS("a second Escape takes it back", fmt.Sprintf(`%s === "You're in line" && %s`, agentText("title"), dialogOpen))
}

func axTree(t *testing.T, tb *tab) []*accessibility.Node {
	t.Helper()
	if _, err := chromedp.Call(tb.ctx, accessibility.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	r, err := chromedp.Call(tb.ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Nodes
}

// value is an accessibility value as text.
func value(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s any
	if json.Unmarshal(v.Value, &s) != nil {
		return string(v.Value)
	}
	return fmt.Sprint(s)
}

func prop(n *accessibility.Node, name string) string {
	for _, p := range n.Properties {
		if string(p.Name) == name {
			return value(p.Value)
		}
	}
	return ""
}

func props(n *accessibility.Node) string {
	var out []string
	for _, p := range n.Properties {
		out = append(out, string(p.Name)+"="+value(p.Value))
	}
	return strings.Join(out, " ")
}

// find is the first node of role (any when "") named name (any when "").
func find(nodes []*accessibility.Node, role, name string) *accessibility.Node {
	for _, n := range nodes {
		if (role == "" || value(n.Role) == role) && (name == "" || value(n.Name) == name) && !n.Ignored {
			return n
		}
	}
	return nil
}

func hasNode(t *testing.T, tb *tab, role, name string) bool {
	t.Helper()
	return find(axTree(t, tb), role, name) != nil
}

func describe(nodes []*accessibility.Node) string {
	var out []string
	for _, n := range nodes {
		if !n.Ignored {
			out = append(out, value(n.Role)+" "+fmt.Sprintf("%q", value(n.Name)))
		}
	}
	return strings.Join(out, "\n")
}

// "Leave the line" frees the place, after asking; a reload before shows
// the same place, without a second enter.
func TestLeaveTheLine(t *testing.T) {
	s := newSite(t, still)
	s.fill(2)
	b := newBrowser(t)
	tb := b.tab(s.shop + "/")
	tb.waitJS("the shop", `!!document.getElementById('book') && document.readyState === 'complete'`)
	tb.click(`button.add[data-train="KTX 101 · 06:00"]`)
	tb.click(`#book`)
	tb.waitJS("the dialog at number 3", fmt.Sprintf(`%s && %s === '3'`, dialogOpen, agentText("position")))

	tb.do("reload", chromedp.Reload())
	tb.waitJS("the shop again", `!!document.getElementById('book') && document.readyState === 'complete'`)
	tb.click(`button.add[data-train="KTX 101 · 06:00"]`)
	tb.click(`#book`)
	tb.waitJS("the same place after a reload", fmt.Sprintf(`%s && %s === '3'`, dialogOpen, agentText("position")))
	if n := s.count("POST", "/enter"); n != 1 {
		t.Errorf("%d enters, want 1: a reload must not enter again", n)
	}
	if n := s.count("GET", "/status"); n < 1 {
		t.Errorf("the reload asked no status")
	}

	// The live region tells a move up at most every 30 s: the next move
	// is shown, not said; one more than 30 s later (on the page's clock)
	// is said.
	tb.waitJS("the place said", fmt.Sprintf(`%s === 'You are number 3 in line'`, agentText("live")))
	s.tickOnce()
	tb.waitJS("number 2 shown", fmt.Sprintf(`%s === '2'`, agentText("position")))
	if said := tb.text(agentText("live")); said != "You are number 3 in line" {
		t.Errorf("a move within 30 s was said: %q", said)
	}
	eval[bool](tb, `(() => { const real = Date.now; Date.now = () => real() + 31000; return true; })()`)
	s.tickOnce()
	tb.waitJS("number 1 said", fmt.Sprintf(`%s === '1' && %s === 'You are number 1 in line'`, agentText("position"), agentText("live")))

	// The status polls carry the credential (Authorization), so the
	// browser asks a preflight first: once, then from its cache.
	if st, pre := s.count("GET", "/status"), s.count("OPTIONS", "/status"); st < 3 || pre != 1 {
		t.Errorf("%d status calls with %d preflights, want 3 or more with 1", st, pre)
	}

	tb.clickAgent("leave")
	tb.waitJS("the question", fmt.Sprintf(`%s === 'Leave the line?'`, agentText("title")))
	if w := s.waiting(); w != 1 {
		t.Fatalf("%d waiting before the leave, want 1", w)
	}
	tb.clickAgent("leave")
	tb.waitJS("the wait rejected with left", `document.getElementById('result').textContent === 'You left the line. Your cart is kept.'`)
	if w := s.waiting(); w != 0 {
		t.Errorf("%d waiting after the leave, want 0: the place is not freed", w)
	}
	if n := s.count("DELETE", "/place"); n != 1 {
		t.Errorf("%d leaves, want 1", n)
	}
	if got := tb.text(`document.getElementById('cart').innerText`); got != "KTX 101 · 06:00" {
		t.Errorf("the cart after leaving: %q", got)
	}
	if kept := tb.text(`Object.keys(localStorage).filter((k) => k.startsWith('waitroom:')).join(',')`); kept != "" {
		t.Errorf("the credential outlived the leave: %s", kept)
	}
	if id := tb.text(`document.activeElement && document.activeElement.id`); id != "book" {
		t.Errorf("focus after leaving: %q", id)
	}
}

// The waiting page passes the same accessibility check: its live region,
// and its leave question as a modal dialog.
func TestWaitingPageAccessible(t *testing.T) {
	s := newSite(t, still)
	s.fill(2)
	b := newBrowser(t)
	tb := b.tab(s.wr + "/q/" + s.queue + "?lang=en")
	tb.waitJS("the waiting page at number 3", `document.body.dataset.state === 'waiting' && document.getElementById('position').textContent === '3'`)
	nodes := axTree(t, tb)
	var live *accessibility.Node
	for _, n := range nodes {
		if value(n.Role) == "status" && prop(n, "live") == "polite" {
			live = n
		}
	}
	if live == nil {
		t.Fatalf("no polite live region:\n%s", describe(nodes))
	}
	if got := tb.text(`document.getElementById('live').textContent`); got != "You are number 3 in line" {
		t.Errorf("the live region says %q", got)
	}
	if find(nodes, "heading", "You're in line") == nil || find(nodes, "button", "Leave the line") == nil {
		t.Errorf("the page's heading or leave button is missing:\n%s", describe(nodes))
	}
	// Its landmarks and labels, as the dialog's: the main content, the
	// place as a region named by its label, the people ahead as a term
	// and its value, the language switch named, English pressed.
	for _, want := range [][2]string{{"main", ""}, {"region", "Your number in line"}, {"term", ""}, {"definition", ""},
		{"navigation", "Language / 언어"}, {"StaticText", "People ahead of you"}, {"StaticText", "2"}} {
		if find(nodes, want[0], want[1]) == nil {
			t.Errorf("no %s %q in the accessibility tree:\n%s", want[0], want[1], describe(nodes))
		}
	}
	if en := find(nodes, "button", "English"); en == nil || prop(en, "pressed") != "true" {
		t.Errorf("the English button is not pressed: %v", en)
	}
	if lang := tb.text(`document.documentElement.lang`); lang != "en" {
		t.Errorf("the page's language is %q", lang)
	}
	tb.click(`#leave-btn`)
	tb.waitJS("the leave question", `document.getElementById('leave-dialog').open`)
	nodes = axTree(t, tb)
	dlg := find(nodes, "dialog", "Leave the line?")
	if dlg == nil {
		t.Fatalf("no dialog named \"Leave the line?\":\n%s", describe(nodes))
	}
	if prop(dlg, "modal") != "true" {
		t.Errorf("the leave question is not modal: %s", props(dlg))
	}
	if id := tb.text(`document.activeElement.id`); id != "leave-cancel" {
		t.Errorf("focus on %q, want the safe choice", id)
	}
	tb.do("escape", chromedp.KeyEvent(kb.Escape))
	tb.waitJS("Escape keeps the place", `!document.getElementById('leave-dialog').open && document.body.dataset.state === 'waiting'`)
	if w := s.waiting(); w != 3 {
		t.Errorf("%d waiting after Escape, want 3", w)
	}
}
