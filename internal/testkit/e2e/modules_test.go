package e2e

import (
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/web"
)

// serveModules serves the pages' files under /_waitroom/static/, as the
// server does, beside a blank page at / to import them from: a module's
// own logic in a real browser, without a stack. It returns the base URL.
func serveModules(t *testing.T) string {
	t.Helper()
	static, err := fs.Sub(web.Static, "static")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/_waitroom/static/", http.StripPrefix("/_waitroom/static/", http.FileServerFS(static)))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!doctype html><title>modules</title>")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// importing evaluates js with the module at /_waitroom/static/module
// bound to m, and decodes what it returns (or resolves to).
func importing[T any](b *browser, module, js string) T {
	b.t.Helper()
	expr := fmt.Sprintf(`import(%s).then((m) => %s)`, strconv.Quote("/_waitroom/static/"+module), js)
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail("import %s: %v", module, err)
	}
	return v
}

// Each page's catalogs (i18n/{page}/{lang}.json, for every language
// i18n.js knows) have the same keys, and every key its page's markup names
// (data-i18n, data-i18n-label, in the page and in its templates) is in
// them; i18n.js renders every message of every language with its
// placeholders filled and every plural form Intl picks, leaving no
// braces. internal/web/i18n checks the same catalogs in Go.
func TestMessageCatalogs(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	base := serveModules(t)
	b := newBrowser(t, chromium)
	b.navigate(base + "/")

	type catalogs struct {
		Langs []string            `json:"langs"`
		Keys  map[string][]string `json:"keys"` // language -> its keys, sorted
		Bad   []string            `json:"bad"`  // lang/key: rendered with braces left, or empty
		Named []string            `json:"named"`
	}
	waitingHTML, err := fs.ReadFile(web.Pages, "pages/waiting.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range []struct{ area, html string }{
		{"waiting", string(waitingHTML)},
		{"admin", ""},
	} {
		t.Run(page.area, func(t *testing.T) {
			markup := strconv.Quote(page.html)
			if page.html == "" {
				markup = `await (await fetch('/_waitroom/static/admin.html')).text()`
			}
			c := importing[catalogs](b, "i18n.js", fmt.Sprintf(`(async () => {
			  const html = %s;
			  const doc = new DOMParser().parseFromString(html, 'text/html');
			  const roots = [doc, ...Array.from(doc.querySelectorAll('template'), (t) => t.content)];
			  const named = new Set();
			  for (const root of roots) {
			    root.querySelectorAll('[data-i18n]').forEach((el) => named.add(el.getAttribute('data-i18n')));
			    root.querySelectorAll('[data-i18n-label]').forEach((el) => named.add(el.getAttribute('data-i18n-label')));
			  }
			  const keys = {}, bad = [];
			  for (const lang of m.LANGS) {
			    const messages = await (await fetch('/_waitroom/static/i18n/%s/' + lang + '.json')).json();
			    keys[lang] = Object.keys(messages).sort();
			    // Render each message through i18n.js, as the page does.
			    const i18n = await m.createI18n('%s', {lang: lang, messages: messages});
			    for (const k of keys[lang]) {
			      const names = new Set();
			      for (const f of [].concat(typeof messages[k] === 'object' ? Object.values(messages[k]) : [messages[k]])) {
			        for (const x of f.matchAll(/\{(\w+)\}/g)) names.add(x[1]);
			      }
			      for (const count of [0, 1, 2, 3, 5, 11, 21, 1000000]) {
			        const params = {count: count};
			        names.forEach((n) => { if (n !== 'count') params[n] = 'X'; });
			        const out = i18n.t(k, params);
			        if (!out.trim() || /[{}]/.test(out)) bad.push(lang + '/' + k + ': ' + out);
			      }
			    }
			  }
			  return {langs: m.LANGS, keys: keys, bad: bad, named: [...named].sort()};
			})()`, markup, page.area, page.area))
			if len(c.Langs) < 6 || c.Langs[0] != "en" {
				t.Fatalf("languages %v, want English first and at least six", c.Langs)
			}
			en := c.Keys["en"]
			for _, lang := range c.Langs[1:] {
				// A setting's label and hint ("setting.<name>") are in
				// English in queue.Catalog, not en.json (internal/web/httpapi's
				// TestSettingWordsTranslated lists those not translated).
				extra := slices.DeleteFunc(difference(c.Keys[lang], en), func(k string) bool { return strings.HasPrefix(k, "setting.") })
				if missing := difference(en, c.Keys[lang]); len(missing)+len(extra) > 0 {
					t.Errorf("%s against en: missing %v; not in en %v", lang, missing, extra)
				}
			}
			for _, bad := range c.Bad {
				t.Errorf("renders badly: %s", bad)
			}
			if len(c.Named) == 0 {
				t.Errorf("%s's markup names no keys", page.area)
			}
			for _, k := range c.Named {
				if !slices.Contains(en, k) {
					t.Errorf("%s's markup names %q, which the catalog does not have", page.area, k)
				}
			}
			if !slices.Contains(en, "pageTitle") {
				t.Error("no pageTitle: i18n.js sets the document's title from it")
			}
		})
	}
}

// difference is what a has and b has not.
func difference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// The turn's next step (waiting-handoff.js turnStep), for every source the
// page knows: the gate's return path first, then the server's target_url,
// then a same-site next_path as a link; never another origin, and null
// (the page then says to go back to the site) when there is none.
func TestTurnStep(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	base := serveModules(t)
	b := newBrowser(t, chromium)
	b.navigate(base + "/")

	type step struct {
		Href string `json:"href"`
		Go   bool   `json:"go"`
	}
	cases := []struct {
		name, ticket, ret string
		want              *step
	}{
		{"target", `{pass: 'P', target_url: 'https://shop.example/order'}`, "", &step{"https://shop.example/order", true}},
		{"return before target", `{pass: 'P', target_url: 'https://shop.example/order'}`, "/order?event=7", &step{"/order?event=7&wr_pass=P", true}},
		{"return without a pass", `{pass: '', target_url: 'https://shop.example/'}`, "/order", &step{"https://shop.example/", true}},
		{"target before next", `{pass: 'P', target_url: 'https://shop.example/', next_path: '/order'}`, "", &step{"https://shop.example/", true}},
		{"next path", `{pass: 'P', next_path: '/order?seat=3#pay'}`, "", &step{"/order?seat=3&wr_pass=P#pay", false}},
		{"next path without a pass", `{next_path: '/order'}`, "", &step{"/order", false}},
		{"nothing", `{pass: 'P'}`, "", nil},
		{"next path to another origin", `{pass: 'P', next_path: 'https://evil.example/'}`, "", nil},
		{"next path, scheme-relative", `{pass: 'P', next_path: '//evil.example/x'}`, "", nil},
		{"next path with a backslash", `{pass: 'P', next_path: '/\\evil.example'}`, "", nil},
		{"next path with a control character", `{pass: 'P', next_path: '/order\n'}`, "", nil},
		{"next path not a string", `{pass: 'P', next_path: 7}`, "", nil},
		{"target not http", `{pass: 'P', target_url: 'javascript:alert(1)'}`, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := importing[*step](b, "waiting-handoff.js", fmt.Sprintf(`m.turnStep(%s, %s)`, c.ticket, strconv.Quote(c.ret)))
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("turnStep(%s, %q) = %+v, want %+v", c.ticket, c.ret, got, c.want)
			}
		})
	}
}
