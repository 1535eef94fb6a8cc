package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The back office refuses a wrong token, signs in with the right one,
// changes the refill size and charts the ticks.
func TestAdmin(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(2)})
	b := newBrowser(t, chromium)
	s.fillWaiting("crowd", 40) // ticks admit people: the chart gets bars

	adminOK := func() int {
		return s.calls.count(func(c call) bool {
			return strings.HasPrefix(c.path, "/admin/v1/") && c.status < 300
		})
	}
	b.navigate(s.url + "/admin")
	b.waitJS(5*time.Second, "the sign-in form", `document.body.dataset.state === 'signed-out' && !document.getElementById('login').hidden`)

	// Wrong token.
	b.do("sign in with a wrong token",
		chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"),
		chromedp.Click(chromedp.CSS("#login-btn")))
	b.waitJS(5*time.Second, "the sign-in error", `!document.getElementById('login-error').hidden`)
	if msg := b.text("#login-error"); !strings.Contains(msg, "not accepted") {
		t.Errorf("#login-error = %q", msg)
	}
	if st := eval[string](b, `document.body.dataset.state`); st != "signed-out" {
		t.Errorf("state %q after a wrong token, want signed-out", st)
	}
	if n := adminOK(); n != 0 {
		t.Errorf("%d successful admin API calls with a wrong token", n)
	}
	rejected := s.calls.count(func(c call) bool {
		return strings.HasPrefix(c.path, "/admin/v1/") && c.status == http.StatusUnauthorized
	})
	if rejected != 1 {
		t.Errorf("%d admin API calls answered 401, want 1", rejected)
	}
	if stored := eval[bool](b, `sessionStorage.getItem('waitroom:admin-token') === null`); !stored {
		t.Error("a rejected token was kept in sessionStorage")
	}
	b.screenshot("login-error")

	// Right token.
	section := fmt.Sprintf(`[data-queue=%q]`, s.queue)
	b.do("sign in",
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS("#login-btn")))
	b.waitJS(5*time.Second, "the dashboard", fmt.Sprintf(
		`document.body.dataset.state === 'signed-in' && document.querySelector(%q) !== null`, section))
	if n := adminOK(); n == 0 {
		t.Error("signed in without a successful admin API call")
	}
	if href := eval[string](b, `location.href`); strings.Contains(href, adminToken) {
		t.Errorf("the token is in the URL: %s", href)
	}
	if got := b.text(section + " .refill-size"); got != "2" {
		t.Errorf(".refill-size = %q, want 2", got)
	}

	// Change the refill size like an operator: clear the field, type, save.
	input := section + " .refill-input"
	b.do("type a new refill size",
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
			`(() => { const el = document.querySelector(%q); el.focus(); el.value = ''; el.dispatchEvent(new Event('input', {bubbles: true})); })()`, input)),
		chromedp.SendKeys(chromedp.CSS(input), "7"),
		chromedp.Click(chromedp.CSS(section+" .refill-submit")))
	b.waitJS(5*time.Second, "the saved message", fmt.Sprintf(
		`!document.querySelector(%q).hidden && document.querySelector(%q).textContent === '7'`,
		section+" .refill-ok", section+" .refill-size"))
	eventually(t, 5*time.Second, "refill size 7 in the store", func() (bool, string) {
		info, err := s.store.Info(context.Background(), s.queue)
		if err != nil {
			return false, err.Error()
		}
		return info.Settings.RefillSize == 7, fmt.Sprint(info.Settings.RefillSize)
	})
	if e := eval[bool](b, fmt.Sprintf(`document.querySelector(%q).hidden`, section+" .refill-error")); !e {
		t.Errorf("refill error shown: %q", b.text(section+" .refill-error"))
	}

	// The chart: a waiting line and admitted bars, drawn from the history
	// of the ticks; a tick admitting 7 shows the new size took effect.
	eventually(t, 10*time.Second, "a tick admitting 7", func() (bool, string) {
		points, err := s.store.History(context.Background(), s.queue)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range points {
			if p.Admitted == 7 {
				return true, ""
			}
		}
		return false, fmt.Sprint(points)
	})
	b.waitJS(10*time.Second, "the chart", fmt.Sprintf(
		`document.querySelector(%q) !== null && document.querySelectorAll(%q).length >= 2`,
		section+" svg.chart path.waiting-line", section+" svg.chart rect.admitted-bar"))
	b.screenshot("dashboard")

	b.do("sign out", chromedp.Click(chromedp.CSS("#signout")))
	b.waitJS(5*time.Second, "the sign-in form after signing out",
		`document.body.dataset.state === 'signed-out' && sessionStorage.getItem('waitroom:admin-token') === null`)
}
