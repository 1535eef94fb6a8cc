package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/humancheck"
	"github.com/waitroom/waitroom/internal/humancheck/humanchecktest"
	"github.com/waitroom/waitroom/internal/redistest"
)

// humanCheckStandInEnter asks every enter of the page for a human check,
// in front of the real server: an enter without {human_token}, or with
// one the checker refuses, is answered 403 human_check_required or
// human_check_failed with the widget's fields in the error body; an enter
// whose token passes goes on to the server without it.
//
// It stands in for the enter path's own wiring of humancheck, so the page
// can be tested before that exists. Once the server asks for the check
// itself, drop this wrapper (stackOptions.wrap) and these tests run
// against the real path as they are.
func humanCheckStandInEnter(c *humancheck.Checker) func(http.Handler) http.Handler {
	refuse := func(w http.ResponseWriter, code, message string) {
		p := c.Public()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{
			"code": code, "message": message, "provider": p.Provider, "sitekey": p.SiteKey, "script_url": p.ScriptURL,
		}})
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/enter") {
				next.ServeHTTP(w, r)
				return
			}
			raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
			if err != nil {
				http.Error(w, "body", http.StatusBadRequest)
				return
			}
			body := map[string]any{}
			_ = json.Unmarshal(raw, &body)
			token, _ := body["human_token"].(string)
			if token == "" {
				refuse(w, "human_check_required", "this room asks for a human check")
				return
			}
			switch err := c.Verify(r.Context(), token, ""); {
			case errors.Is(err, humancheck.ErrFailed):
				refuse(w, "human_check_failed", "the human check did not pass")
				return
			case err != nil:
				http.Error(w, "unavailable", http.StatusServiceUnavailable)
				return
			}
			delete(body, "human_token")
			raw, _ = json.Marshal(body)
			r.Body = io.NopCloser(bytes.NewReader(raw))
			r.ContentLength = int64(len(raw))
			next.ServeHTTP(w, r)
		})
	}
}

// humanStack is a stack whose enter asks for a human check of the
// stand-in provider sp, as provider p, with the page's policy allowing
// its widget.
func humanStack(t *testing.T, sp *humanchecktest.Server, p humancheck.Provider) *stack {
	t.Helper()
	sp.SetHostname("") // the page's own host, as the widget reports it
	checker, err := humancheck.New(sp.Options(p, "127.0.0.1"), redistest.Client(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	return newStack(t, stackOptions{
		settings: fastTicks(1),
		api:      func(o *httpapi.Options) { o.HumanCheck = checker.Public() },
		wrap:     humanCheckStandInEnter(checker),
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
