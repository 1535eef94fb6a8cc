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

// Each page's messages module holds one catalog per language with the
// same keys, each a string in every language or a function in every
// language, and every key its page's markup names (data-i18n,
// data-i18n-label, in the page and in its templates) is in it. A key
// added to English only, or a typo in the HTML, fails here.
func TestMessageCatalogs(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	base := serveModules(t)
	b := newBrowser(t, chromium)
	b.navigate(base + "/")

	type catalogs struct {
		Langs []string            `json:"langs"`
		Kinds map[string][]string `json:"kinds"` // language -> "key:string" or "key:function", sorted
		Named []string            `json:"named"` // the keys the page's markup names
	}
	for _, page := range []struct{ module, html string }{
		{"waiting-messages.js", "waiting.html"},
		{"admin-messages.js", "admin.html"},
	} {
		t.Run(page.module, func(t *testing.T) {
			c := importing[catalogs](b, page.module, fmt.Sprintf(`fetch(%s).then((r) => r.text()).then((html) => {
			  const doc = new DOMParser().parseFromString(html, 'text/html');
			  const roots = [doc, ...Array.from(doc.querySelectorAll('template'), (t) => t.content)];
			  const named = new Set();
			  for (const root of roots) {
			    root.querySelectorAll('[data-i18n]').forEach((el) => named.add(el.getAttribute('data-i18n')));
			    root.querySelectorAll('[data-i18n-label]').forEach((el) => named.add(el.getAttribute('data-i18n-label')));
			  }
			  const kinds = {};
			  for (const [lang, strings] of Object.entries(m.STRINGS)) {
			    kinds[lang] = Object.keys(strings).sort().map((k) => k + ':' + typeof strings[k]);
			  }
			  return {langs: Object.keys(m.STRINGS), kinds: kinds, named: [...named].sort()};
			})`, strconv.Quote("/_waitroom/static/"+page.html)))
			if len(c.Langs) < 2 || c.Langs[0] != "en" {
				t.Fatalf("languages %v, want English first and at least one more", c.Langs)
			}
			en := c.Kinds["en"]
			for _, lang := range c.Langs[1:] {
				if missing, extra := difference(en, c.Kinds[lang]), difference(c.Kinds[lang], en); len(missing)+len(extra) > 0 {
					t.Errorf("%s against en: missing or of another kind %v; not in en %v", lang, missing, extra)
				}
			}
			keys := map[string]bool{}
			for _, k := range en {
				keys[strings.SplitN(k, ":", 2)[0]] = true
			}
			if len(c.Named) == 0 {
				t.Errorf("%s names no keys", page.html)
			}
			for _, k := range c.Named {
				if !keys[k] {
					t.Errorf("%s names %q, which the catalog does not have", page.html, k)
				}
			}
			if !keys["pageTitle"] {
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
