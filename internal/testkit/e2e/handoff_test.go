package e2e

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// A place moves from a laptop to a phone, two browsers with cookie jars
// of their own: the laptop shows a QR code and a code, the phone opens
// the QR code's link and shows the same member at the same position, the
// laptop's page says its place moved, and the link does not work twice.
func TestContinueOnAnotherDevice(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Minute}})
	s.fillWaiting("ahead", 4)

	laptop := newBrowser(t, chromium)
	laptop.navigate(s.url + "/q/" + s.queue)
	laptop.waitJS(joinDeadline, "the laptop waiting", jsState("waiting"))
	member := s.member(laptop)
	position := laptop.number("#position")

	laptop.do("continue on another device", chromedp.Click(chromedp.CSS("#move-btn")))
	laptop.waitJS(10*time.Second, "the QR code and the code",
		`!document.getElementById('move-box').hidden && document.getElementById('move-qr').complete && document.getElementById('move-qr').naturalWidth >= 256`)
	code := laptop.text("#move-code")
	if len(code) != 9 || code[4] != '-' {
		t.Errorf("code %q, want ABCD-EFGH", code)
	}
	laptop.screenshot("handoff-shown")
	src := eval[string](laptop, `document.getElementById('move-qr').getAttribute('src')`)
	u, err := url.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	// The QR code's link (the picture encodes it; the page asked for it
	// with the same token).
	link := s.url + "/q/" + s.queue + "?handoff=" + url.QueryEscape(u.Query().Get("token"))

	phone := newBrowser(t, chromium)
	phone.navigate(link)
	phone.waitJS(joinDeadline, "the phone waiting", jsState("waiting"))
	if got := s.member(phone); got != member {
		t.Errorf("phone holds %q, want the laptop's %q", got, member)
	}
	if got := phone.number("#position"); got != position {
		t.Errorf("phone at %d, the laptop was at %d", got, position)
	}
	if addr := eval[string](phone, `location.href`); strings.Contains(addr, "handoff") {
		t.Errorf("the used token stays in the address: %s", addr)
	}
	if notice := phone.text("#notice"); !strings.Contains(notice, "moved to this device") {
		t.Errorf("phone notice %q", notice)
	}
	phone.screenshot("handoff-phone")

	// The laptop learns at its next request (here: the network is back).
	eval[bool](laptop, `window.dispatchEvent(new Event('online'))`)
	laptop.waitJS(10*time.Second, "the laptop's moved panel", jsState("moved"))
	if text := laptop.text("#moved-title"); !strings.Contains(text, "moved to another device") {
		t.Errorf("laptop says %q", text)
	}
	laptop.screenshot("handoff-laptop-moved")
	if tk := s.status(member); tk.Status != queue.Waiting || tk.Position != position {
		t.Errorf("the place after the move: %+v", tk)
	}

	// The link again, in the laptop's browser (its cookie cleared): refused.
	laptop.navigate(link)
	laptop.waitJS(10*time.Second, "the reused link refused", jsState("error"))
	if text := laptop.text("#error-text"); !strings.Contains(text, "already used") {
		t.Errorf("reused link: %q", text)
	}
	if got := s.member(phone); got != member {
		t.Errorf("after the reuse the phone holds %q", got)
	}
}
