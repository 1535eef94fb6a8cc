package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/web/httpapi"
	"github.com/waitroom/waitroom/internal/web/i18n"
	"github.com/waitroom/waitroom/internal/web/pages"
)

// The waiting page as the server renders it (internal/web/pages): in six
// languages, from an operator's template, with the queue's own title and
// message set in the back office.

// setText sets the queue's title and message through the admin API, as
// the back office does.
func (s *stack) setText(title, message map[string]string) {
	s.t.Helper()
	body, _ := json.Marshal(map[string]any{"title": title, "message": message})
	req, _ := http.NewRequest(http.MethodPatch, s.url+"/admin/v1/queues/"+s.queue, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("PATCH title and message: %s", resp.Status)
	}
}

// The operator writes a title and message per language in the back
// office; the waiting page shows the one of its language, as text.
func TestAdminQueueText(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Minute}})
	s.fillWaiting("ahead", 3)
	// Set before the back office opens: its fields show what is saved.
	s.setText(map[string]string{"ja": "既存のタイトル"}, nil)

	b := newBrowser(t, chromium)
	section := signInAdmin(b, s)
	field := func(lang, kind string) string {
		return fmt.Sprintf(`%s .text-%s[data-text-lang=%q]`, section, kind, lang)
	}
	b.waitJS(5*time.Second, "the saved Japanese title in its field", fmt.Sprintf(`document.querySelector(%q).value === '既存のタイトル'`, field("ja", "title")))
	if n := eval[int](b, fmt.Sprintf(`document.querySelectorAll(%q).length`, section+" .text-lang")); n != len(i18n.Langs) {
		t.Errorf("%d languages in the text form, want %d", n, len(i18n.Langs))
	}
	// Every field has a label the page's language names.
	if unlabelled := eval[int](b, fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).filter((el) => !el.labels.length || !el.labels[0].textContent.trim()).length`,
		section+" .text-langs input, "+section+" .text-langs textarea")); unlabelled != 0 {
		t.Errorf("%d text fields without a label", unlabelled)
	}

	// typeInto clears a field and types value, as an operator does.
	typeInto := func(css, value string) {
		b.do("clear "+css, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
			`(() => { const el = document.querySelector(%q); el.focus(); el.value = ''; el.dispatchEvent(new Event('input', {bubbles: true})); })()`, css)))
		if value != "" {
			b.do("type into "+css, chromedp.SendKeys(chromedp.CSS(css), value))
		}
	}
	typeInto(field("en", "title"), "Seollal trains: Seoul → Busan")
	typeInto(field("ko", "title"), "설 명절 열차: 서울 → 부산")
	typeInto(field("en", "message"), "Sales open at 07:00")
	typeInto(field("ja", "title"), "") // cleared: Japanese falls back to English
	b.do("save the text", chromedp.Click(chromedp.CSS(section+" .text-submit")))
	b.waitJS(5*time.Second, "the text saved", jsShown(section+" .text-ok"))
	b.screenshot("admin-queue-text")

	text, err := s.store.Text(b.ctx, s.queue)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(text.Title), fmt.Sprint(map[string]string{"en": "Seollal trains: Seoul → Busan", "ko": "설 명절 열차: 서울 → 부산"}); got != want {
		t.Errorf("saved title %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(text.Message), fmt.Sprint(map[string]string{"en": "Sales open at 07:00"}); got != want {
		t.Errorf("saved message %s, want %s", got, want)
	}

	for _, c := range []struct{ lang, title, message string }{
		{"ko", "설 명절 열차: 서울 → 부산", "Sales open at 07:00"},
		{"ja", "Seollal trains: Seoul → Busan", "Sales open at 07:00"},
	} {
		b.navigate(s.url + "/q/" + s.queue + "?lang=" + c.lang)
		b.waitJS(joinDeadline, "the waiting page in "+c.lang, `document.body.dataset.state === 'waiting' && document.documentElement.lang === `+fmt.Sprintf("%q", c.lang))
		if got := b.text("#queue-title"); got != c.title {
			t.Errorf("%s: the waiting page's title %q, want %q", c.lang, got, c.title)
		}
		if got := b.text("#queue-message"); got != c.message {
			t.Errorf("%s: the waiting page's message %q, want %q", c.lang, got, c.message)
		}
	}
	b.screenshot("waiting-queue-text")
}

// The waiting page speaks each of its languages, chosen by ?lang= and
// by Accept-Language: the server renders the markup in it and the
// script keeps it, every visible string its catalog's, none a key or
// an unfilled {placeholder}.
func TestWaitingPageLanguages(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Minute}})
	s.fillWaiting("ahead", 3)
	catalogs, err := pages.Messages()
	if err != nil {
		t.Fatal(err)
	}
	// A browser's Accept-Language for each, as people send it.
	accept := map[string]string{
		"en": "en-GB,en;q=0.9", "ko": "ko-KR,ko;q=0.9,en;q=0.5", "ja": "ja,en-US;q=0.7",
		"zh-Hans": "zh-CN,zh;q=0.9", "zh-Hant": "zh-TW,zh;q=0.9,en;q=0.3", "es": "es-MX,es;q=0.9",
	}
	b := newBrowser(t, chromium)

	check := func(how, lang string) {
		t.Helper()
		b.waitJS(joinDeadline, "the waiting page in "+lang+" ("+how+")", fmt.Sprintf(
			`document.body.dataset.state === 'waiting' && document.documentElement.lang === %q && document.getElementById('position').textContent.trim() !== '–'`, lang))
		plain := catalogs.Plain(lang)
		if got := eval[string](b, `document.title`); got != plain["pageTitle"] {
			t.Errorf("%s (%s): title %q, want %q", lang, how, got, plain["pageTitle"])
		}
		// Every visible element named by key: its catalog's text.
		shown := eval[[][]string](b, `Array.from(document.querySelectorAll('[data-i18n]'))
		  .filter((el) => el.getClientRects().length > 0)
		  .map((el) => [el.getAttribute('data-i18n'), el.textContent.trim()])`)
		if len(shown) < 8 {
			t.Errorf("%s (%s): only %d visible data-i18n elements", lang, how, len(shown))
		}
		for _, kv := range shown {
			key, text := kv[0], kv[1]
			if text == "" || text == key || text != plain[key] {
				t.Errorf("%s (%s): [data-i18n=%s] shows %q, want %q", lang, how, key, text, plain[key])
			}
		}
		// The script's own strings: filled, never a key.
		for _, id := range []string{"status-text", "eta", "live"} {
			text := b.text("#" + id)
			if strings.ContainsAny(text, "{}") || (text != "" && len(catalogs.Keys(lang)) > 0 && isKey(catalogs, lang, text)) {
				t.Errorf("%s (%s): #%s = %q", lang, how, id, text)
			}
		}
		if text := b.text("#status-text"); text == "" {
			t.Errorf("%s (%s): no status text", lang, how)
		}
		b.screenshot("waiting-" + lang + "-" + how)
	}

	for _, lang := range i18n.Langs {
		b.navigate(s.url + "/q/" + s.queue + "?lang=" + lang)
		check("query", lang)
	}
	for _, lang := range i18n.Langs {
		// Network must be enabled for the tab's extra headers to apply.
		if _, err := chromedp.Call(b.ctx, network.Enable, network.EnableParams{}); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(b.ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": accept[lang]}}); err != nil {
			t.Fatal(err)
		}
		b.navigate(s.url + "/q/" + s.queue)
		check("accept-language", lang)
	}
}

// isKey reports whether text is one of the catalog's keys.
func isKey(c *i18n.Catalogs, lang, text string) bool {
	for _, k := range c.Keys(lang) {
		if k == text {
			return true
		}
	}
	return false
}

// exampleDir is the shipped operator directory (deploy/pages-example)
// for the test's queue: its waiting.html and assets, without its
// queues/default/, which names a queue the test does not have.
func exampleDir(t *testing.T) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"waiting.html", "site.css", "logo.svg"} {
		b, err := os.ReadFile(filepath.Join(root, "deploy", "pages-example", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// An operator's template (WAITROOM_PAGES_DIR, the shipped example) runs
// the line as the project's page does: the script polls, shows the
// number and reaches the turn.
func TestOperatorTemplate(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	dir := exampleDir(t)
	s := newStack(t, stackOptions{
		settings: fastTicks(1),
		api: func(o *httpapi.Options) {
			msgs, err := pages.Messages()
			if err != nil {
				t.Fatal(err)
			}
			p, err := pages.New(pages.Options{Project: pages.ProjectFS(), Messages: msgs, Dir: dir, Queues: o.Store.Queues()})
			if err != nil {
				t.Fatal(err)
			}
			o.Pages = p
		},
	})
	s.setText(map[string]string{"en": "Night trains"}, nil)
	// The line is paused until the page has polled once in line, and then
	// moves: the page polls at least twice before its turn however long a
	// loaded machine takes to start it (with twelve ahead at one a second
	// and no pause, a page that slow was admitted at its first poll).
	paused, resumed := true, false
	s.update(queue.Update{Paused: &paused})
	s.fillWaiting("ahead", 3)

	b := newBrowser(t, chromium)
	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(joinDeadline, "a number in line on the operator's page", `document.body.dataset.state === 'waiting' && /^[0-9]+$/.test(document.getElementById('position').textContent.trim())`)
	if got := b.text("#queue-title"); got != "Night trains" {
		t.Errorf("#queue-title = %q, want Night trains", got)
	}
	// The operator's own files load: its stylesheet applies.
	if ok := eval[bool](b, `Array.from(document.styleSheets).some((s) => s.href && s.href.endsWith('/_waitroom/site/site.css') && s.cssRules.length > 0)`); !ok {
		t.Error("the operator's site.css did not load")
	}
	if ok := eval[bool](b, `document.body.classList.contains('site-page') && document.querySelector('img[src="/_waitroom/site/logo.svg"]').complete && document.querySelector('img[src="/_waitroom/site/logo.svg"]').naturalWidth > 0`); !ok {
		t.Error("the operator's page or its logo is not there")
	}
	member := s.member(b)
	wait.For(t, joinDeadline, "a status call while the line is paused", func() (bool, string) {
		n := s.statusCalls(member)
		return n >= 1, fmt.Sprintf("%d status calls", n)
	})
	s.update(queue.Update{Paused: &resumed})
	b.waitJS(60*time.Second, "the turn on the operator's page", `document.body.dataset.state === 'entered' && !document.getElementById('turn').hidden`)
	if n := s.statusCalls(member); n < 2 {
		t.Errorf("%d status calls before the turn, want the page to poll", n)
	}
	if tk := s.status(member); tk.Status != queue.Entered {
		t.Errorf("the server says %v, want entered", tk.Status)
	}
	b.screenshot("operator-template-turn")
}

// A title or message is an operator's input shown to everyone in line:
// markup in it is shown as text, in the project's page and an
// operator's, and runs nothing.
func TestQueueTextIsText(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	example := exampleDir(t)
	title := `</script><script>window.pwned = 'title'</script><b>`
	message := `"><img src=x onerror="window.pwned = 'message'">` + "\n" + `<script>window.pwned = 'script'</script><!--`
	for _, c := range []struct{ name, dir string }{{"project", ""}, {"operator", example}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newStack(t, stackOptions{
				settings: queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Minute},
				api: func(o *httpapi.Options) {
					if c.dir == "" {
						return
					}
					msgs, err := pages.Messages()
					if err != nil {
						t.Fatal(err)
					}
					if o.Pages, err = pages.New(pages.Options{Project: pages.ProjectFS(), Messages: msgs, Dir: c.dir, Queues: o.Store.Queues()}); err != nil {
						t.Fatal(err)
					}
				},
			})
			s.fillWaiting("ahead", 2)
			s.setText(map[string]string{"en": title, "ko": title}, map[string]string{"en": message})

			b := newBrowser(t, chromium)
			b.navigate(s.url + "/q/" + s.queue)
			b.waitJS(joinDeadline, "the waiting page", `document.body.dataset.state === 'waiting'`)
			check := func(when string) {
				if got := eval[string](b, `document.getElementById('queue-title').textContent`); got != title {
					t.Errorf("%s: #queue-title shows %q, want the title as typed", when, got)
				}
				if got := eval[string](b, `document.getElementById('queue-message').textContent`); got != message {
					t.Errorf("%s: #queue-message shows %q, want the message as typed", when, got)
				}
				if pwned := eval[string](b, `String(window.pwned)`); pwned != "undefined" {
					t.Errorf("%s: the text ran as script (%s)", when, pwned)
				}
				if n := eval[int](b, `document.querySelectorAll('#queue-title *, #queue-message *, img[src="x"], b').length`); n != 0 {
					t.Errorf("%s: the text made %d elements", when, n)
				}
				// The script tags are the page's own: its data, its rescue
				// (inline) and its module.
				if n := eval[int](b, `Array.from(document.scripts).filter((s) => s.id !== 'wr-page' && !s.src.endsWith('/_waitroom/static/waiting.js') && !(s.src === '' && s.textContent.includes('waitroom:reloads'))).length`); n != 0 {
					t.Errorf("%s: %d script elements beyond the page's own", when, n)
				}
			}
			check("rendered")
			// The script sets the text again on a language switch (textContent).
			if c.dir == "" {
				b.do("switch to Korean", chromedp.Click(chromedp.CSS(`button[data-lang="ko"]`)))
				b.waitJS(5*time.Second, "the page in Korean", `document.documentElement.lang === 'ko'`)
				check("switched")
			}
			b.screenshot("queue-text-is-text-" + c.name)
		})
	}
}
