package agente2e

import (
	"fmt"
	"strings"
	"testing"
)

// agentEl is an expression for an element of the agent's dialog, by id.
func agentEl(id string) string {
	return fmt.Sprintf(`document.querySelector('[data-waitroom-agent]').shadowRoot.getElementById(%q)`, id)
}

// useCode types code into the dialog's "Moving your place here" form and
// sends it.
func (tb *tab) useCode(code string) {
	tb.t.Helper()
	eval[bool](tb, fmt.Sprintf(`(() => { %s.open = true; %s.value = %q; %s.requestSubmit(); return true; })()`,
		agentEl("move-use"), agentEl("move-use-code"), code, agentEl("move-use-form")))
}

// Moving a place to another device from the agent, as on the waiting
// page: the laptop's dialog shows a hand-over's code and QR code; the
// phone, on the same shop in another browser, holds a place of its own at
// the back, is refused a wrong code (its place kept), then types the
// right one and takes the laptop's place, number and all; the laptop's
// dialog says the place moved, and the phone books at the turn.
func TestMoveToAnotherDevice(t *testing.T) {
	s := newSite(t, still)
	s.fill(2)
	book := func(tb *tab, n int) {
		t.Helper()
		tb.waitJS("the shop", `!!document.getElementById('book') && document.readyState === 'complete'`)
		tb.click(`button.add[data-train="KTX 101 · 06:00"]`)
		tb.click(`#book`)
		tb.waitJS(fmt.Sprintf("the dialog at number %d", n), fmt.Sprintf(`%s && %s === '%d'`, dialogOpen, agentText("position"), n))
	}
	laptop := newBrowser(t).tab(s.shop + "/")
	book(laptop, 3)
	laptop.clickAgent("move-btn")
	laptop.waitJS("the code and its QR code", fmt.Sprintf(`%s !== '' && !%s.hidden && %s.naturalWidth > 0`, agentText("move-code"), agentEl("move-qr"), agentEl("move-qr")))
	code := laptop.text(agentText("move-code"))
	if got := laptop.text(agentText("move-help")); !strings.HasPrefix(got, "Scan this QR code") {
		t.Errorf("the hand-over's words: %q", got)
	}
	if got := laptop.text(agentText("move-expires")); !strings.HasPrefix(got, "The code works once, until") {
		t.Errorf("the hand-over's expiry: %q", got)
	}
	if alt := laptop.text(agentEl("move-qr") + `.alt`); alt != "QR code to continue on another device" {
		t.Errorf("the QR code's text: %q", alt)
	}
	if id := laptop.text(`document.querySelector('[data-waitroom-agent]').shadowRoot.activeElement.id`); id != "move-close" {
		t.Errorf("focus on %q after showing the hand-over, want its Close", id)
	}

	phone := newBrowser(t).tab(s.shop + "/")
	book(phone, 4)
	phone.useCode("WRONG-CODE")
	phone.waitJS("the wrong code refused", fmt.Sprintf(`%s === "This code or link is not valid, was already used, or has expired. Ask the other device for a new one."`, agentText("status")))
	phone.clickAgent("again")
	phone.waitJS("its own place kept", fmt.Sprintf(`%s === '4'`, agentText("position")))

	phone.useCode(code)
	phone.waitJS("the laptop's place on the phone", fmt.Sprintf(`%s === '3' && %s === 'Your place moved to this device.'`, agentText("position"), agentText("notice")))
	laptop.waitJS("the laptop told", fmt.Sprintf(`%s === 'Your place moved to another device'`, agentText("title")))
	if w := s.waiting(); w != 3 {
		t.Errorf("%d waiting, want 3: the phone gave up its own place for the laptop's", w)
	}
	s.admitAll()
	phone.waitJS("the phone booked", `document.getElementById('result').textContent.startsWith('Booked:')`)
	if got := laptop.text(`document.getElementById('result').textContent`); got != "" {
		t.Errorf("the laptop's page: %q", got)
	}
	if n := s.count("POST", "/handoff"); n != 1 {
		t.Errorf("%d hand-overs asked, want 1", n)
	}
}
