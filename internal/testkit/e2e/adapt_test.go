package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// The operator turns the automatic rate on in the back office, sets its
// target, error rate and probe URL (a relative one is refused with the
// server's message under the field), sees the refill in force marked
// automatic while the controller holds it below the refill size, and
// turns it off: the refill size is what each tick admits again at once.
func TestAdminAdapt(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(5)})
	b := newBrowser(t, chromium)
	ctx := context.Background()
	adapt := func() queue.AdaptState {
		t.Helper()
		st, err := s.store.Adapt(ctx, s.queue)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	section := signInAdmin(b, s)
	state, button, effective := section+" .adapt-state", section+" .adapt-btn", section+" .refill-effective"
	refill := strconv.Itoa(s.info().Settings.RefillSize)
	b.waitJS(5*time.Second, "the automatic rate off", fmt.Sprintf(`%s === 'Off: the refill size applies' && %s === %q`,
		jsText(state), jsText(effective), refill+" (the refill size)"))

	b.do("turn the automatic rate on", chromedp.Click(chromedp.CSS(button)))
	b.waitJS(5*time.Second, "the automatic rate on", fmt.Sprintf(`%s === 'On' && %s === 'Turn off'`, jsText(state), jsText(button)))
	if !adapt().Enabled {
		t.Fatal("store: adapt_enabled is not on after the switch")
	}

	form := func(name string) (input, submit, ok, bad string) {
		f := section + " [data-setting=" + name + "]"
		return f + " .setting-input", f + " .setting-submit", f + " .setting-ok", f + " .setting-error"
	}
	input, submit, ok, _ := form("origin_target_p95_ms")
	saveSetting(b, input, submit, "800")
	b.waitJS(5*time.Second, "the saved target", jsShown(ok))
	if msg := b.text(ok); msg != "Saved: the rate drops while the order page answers slower than 800 ms (p95)." {
		t.Errorf("%s = %q", ok, msg)
	}
	input, submit, ok, _ = form("origin_max_error_rate")
	saveSetting(b, input, submit, "5")
	b.waitJS(5*time.Second, "the saved error rate", jsShown(ok))
	if msg := b.text(ok); msg != "Saved: the rate drops while more than 5 % of the answers are errors." {
		t.Errorf("%s = %q", ok, msg)
	}
	input, submit, ok, bad := form("origin_probe_url")
	saveSetting(b, input, submit, "/healthz")
	b.waitJS(5*time.Second, "the server's refusal of a relative probe URL", jsShown(bad))
	saveSetting(b, input, submit, "http://orders.internal:8081/healthz")
	b.waitJS(5*time.Second, "the saved probe URL", jsShown(ok)+" && !"+jsShown(bad))
	st := adapt()
	if st.TargetP95 != 800*time.Millisecond || st.MaxErrorRate != 0.05 || st.ProbeURL != "http://orders.internal:8081/healthz" {
		t.Fatalf("store after the forms: %+v", st)
	}

	// The controller holds the rate at 1 (as a step of internal/ops/autorate
	// stores it): the page says so at its next refresh.
	if err := s.rdb.HSet(ctx, rediskeys.Config(s.queue), "refill_effective", 1).Err(); err != nil {
		t.Fatal(err)
	}
	b.waitJS(5*time.Second, "the effective refill", fmt.Sprintf(`%s === '1 (automatic)'`, jsText(effective)))
	b.screenshot("adapt-on")

	b.do("turn the automatic rate off", chromedp.Click(chromedp.CSS(button)))
	b.waitJS(5*time.Second, "the refill size again", fmt.Sprintf(`%s === %q`, jsText(effective), refill+" (the refill size)"))
	if st := adapt(); st.Enabled || st.RefillEffective != st.RefillSize {
		t.Fatalf("store after switching off: %+v", st)
	}
}
