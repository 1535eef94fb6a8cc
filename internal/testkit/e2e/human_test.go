package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/trust/humancheck/humanchecktest"
	"github.com/waitroom/waitroom/internal/web/httpapi"
)

// humanStack is a stack whose queue asks everyone for a human check
// (human_check: always) of the stand-in provider sp, as provider p,
// through the real enter path: the server verifies the page's token with
// the provider, and the page's policy allows its widget.
func humanStack(t *testing.T, sp *humanchecktest.Server, p humancheck.Provider) *stack {
	t.Helper()
	sp.SetHostname("") // the page's own host, as the widget reports it
	checker, err := humancheck.New(sp.Options(p, "127.0.0.1"), redistest.Client(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	always := queue.HumanAlways
	return newStack(t, stackOptions{
		settings:  fastTicks(1),
		api:       func(o *httpapi.Options) { o.Human = checker },
		storeOpts: []queue.Option{queue.WithHumanCheck(checker.Available)},
		update:    &queue.Update{HumanCheck: &always},
	})
}

// A person asked for a human check sees the provider's widget in their
// language, solves it, and holds a place; a refused token is said so and
// the widget drawn afresh. The page's policy lets the widget's script in
// (a refused script would be a console error, failing the test).
func TestHumanCheckSolvedByThePage(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	sp := humanchecktest.NewServer(t)
	s := humanStack(t, sp, humancheck.Turnstile)

	b := newBrowserIn(t, chromium, "ko-KR")
	recordStatusTexts(b)
	sp.SetMode(humanchecktest.Refuse) // the first token is refused
	b.navigate(s.url + "/q/" + s.queue)
	const button = "#human-check-widget .standin-human-button"
	b.waitJS(joinDeadline, "the widget", `!!document.querySelector(`+jsQuote(button)+`)`)
	if !eval[bool](b, jsShown("#human-check")) {
		t.Error("the human check's box is hidden")
	}
	if lang := eval[string](b, `document.querySelector('#human-check-widget .standin-human-check').dataset.lang`); lang != "ko" {
		t.Errorf("the widget was drawn in %q, want ko (Turnstile's language)", lang)
	}
	if got := b.text("#human-check-text"); got != "줄에 서려면 사람임을 확인해 주세요." {
		t.Errorf("#human-check-text %q, want the Korean prompt", got)
	}
	b.screenshot("human-check-asked")

	b.do("solve the check", chromedp.Click(chromedp.CSS(button)))
	b.waitJS(joinDeadline, "the refusal said", jsText("#human-check-text")+` === "확인이 완료되지 않았습니다. 다시 시도해 주세요."`)
	b.waitJS(joinDeadline, "the widget drawn afresh", `!!document.querySelector(`+jsQuote(button)+`) && !document.querySelector(`+jsQuote(button)+`).disabled`)
	b.screenshot("human-check-refused")

	sp.SetMode(humanchecktest.Accept)
	b.do("solve the check again", chromedp.Click(chromedp.CSS(button)))
	b.waitJS(joinDeadline, "a place", jsState("waiting")+" || "+jsState("entered"))
	if eval[bool](b, jsShown("#human-check")) {
		t.Error("the human check still shows with a place")
	}
	b.screenshot("human-check-placed")

	var codes []int
	for _, c := range s.callsTo(http.MethodPost, "/enter") {
		codes = append(codes, c.status)
	}
	if !slices.Equal(codes, []int{http.StatusForbidden, http.StatusForbidden, http.StatusOK}) {
		t.Errorf("the page's enters were answered %v, want [403 403 200]: required, failed, placed", codes)
	}
	if sp.Calls() != 2 || sp.Issued() != 2 {
		t.Errorf("the provider saw %d verifications of %d tokens, want 2 of 2", sp.Calls(), sp.Issued())
	}
	seen := eval[[]string](b, `window.__statusTexts`)
	if !slices.Contains(seen, "줄에 서려면 사람임을 확인해 주세요.") {
		t.Errorf("#status-text went %q; want it to ask for the check", seen)
	}
}

// hCaptcha's and reCAPTCHA's API: the same page, their render call and
// their language codes.
func TestHumanCheckOtherProviders(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	for _, c := range []struct {
		provider humancheck.Provider
		lang     string // the browser's
		want     string // the widget's hl
	}{
		{humancheck.HCaptcha, "zh-TW", "zh-TW"},
		{humancheck.ReCAPTCHA, "es-ES", "es"},
	} {
		t.Run(string(c.provider), func(t *testing.T) {
			t.Parallel()
			sp := humanchecktest.NewServer(t)
			s := humanStack(t, sp, c.provider)
			b := newBrowserIn(t, chromium, c.lang)
			b.navigate(s.url + "/q/" + s.queue)
			const widget = "#human-check-widget .standin-human-check"
			b.waitJS(joinDeadline, "the widget", `!!document.querySelector(`+jsQuote(widget)+`)`)
			got := eval[[]string](b, `(() => { const w = document.querySelector(`+jsQuote(widget)+`); return [w.dataset.provider, w.dataset.lang, w.dataset.sitekey]; })()`)
			wantProvider := map[humancheck.Provider]string{humancheck.HCaptcha: "hcaptcha", humancheck.ReCAPTCHA: "grecaptcha"}[c.provider]
			if !slices.Equal(got, []string{wantProvider, c.want, humanchecktest.SiteKey}) {
				t.Errorf("widget %q, want [%s %s %s]", got, wantProvider, c.want, humanchecktest.SiteKey)
			}
			b.do("solve the check", chromedp.Click(chromedp.CSS(widget+" button")))
			b.waitJS(joinDeadline, "a place", jsState("waiting")+" || "+jsState("entered"))
		})
	}
}

// jsQuote is s as a JavaScript string literal.
func jsQuote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
