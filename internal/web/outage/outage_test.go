package outage

import (
	"html"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/web/i18n"
)

// request is a browser's GET of a page, asking for lang.
func request(lang string) *http.Request {
	r := httptest.NewRequest("GET", "/q/default", nil)
	r.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	r.Header.Set("Accept-Language", lang)
	r.Header.Set("Sec-Fetch-Mode", "navigate")
	return r
}

var (
	styleBlock  = regexp.MustCompile(`(?s)<style>(.*?)</style>`)
	scriptBlock = regexp.MustCompile(`(?s)<script>(.*?)</script>`)
	refresh     = regexp.MustCompile(`<noscript><meta http-equiv="refresh" content="(\d+)"></noscript>`)
	dataFirst   = regexp.MustCompile(`data-first="(\d+)"`)
)

// The page in every language, for every visitor: 503 with Retry-After
// from FirstWait to FirstWait+FirstSpread, which the no-script refresh
// and the script's first wait repeat; the language's words (no key left
// unfilled); and a policy that allows exactly its inline style and
// script, by hash, and nothing else inline.
func TestPageEveryLanguage(t *testing.T) {
	cat := catalogs(t)
	for _, lang := range i18n.Langs {
		for v := range visitors {
			t.Run(lang+"/"+bodyKey[v], func(t *testing.T) {
				w := httptest.NewRecorder()
				Write(w, request(lang), v)
				body := w.Body.String()
				if w.Code != http.StatusServiceUnavailable {
					t.Fatalf("status %d", w.Code)
				}
				after, err := strconv.Atoi(w.Header().Get("Retry-After"))
				if err != nil || after < FirstWait || after > FirstWait+FirstSpread {
					t.Errorf("Retry-After %q", w.Header().Get("Retry-After"))
				}
				if m := refresh.FindStringSubmatch(body); m == nil || m[1] != strconv.Itoa(after) {
					t.Errorf("no-script refresh %v, Retry-After %d", m, after)
				}
				if m := dataFirst.FindStringSubmatch(body); m == nil || m[1] != strconv.Itoa(after) {
					t.Errorf("script's first wait %v, Retry-After %d", m, after)
				}
				for h, want := range map[string]string{
					"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", "Content-Language": lang,
				} {
					if got := w.Header().Get(h); got != want {
						t.Errorf("%s: %q, want %q", h, got, want)
					}
				}
				if !strings.Contains(body, `<html lang="`+lang+`">`) {
					t.Errorf("no <html lang=%q>", lang)
				}
				for _, key := range []string{"unavailableTitle", bodyKey[v], "unavailableRetryNow", "unavailableRetrying"} {
					if s := html.EscapeString(cat.Text(lang, key, nil)); !strings.Contains(body, s) {
						t.Errorf("%s (%q) missing", key, s)
					}
				}
				if s := cat.Text(lang, "unavailableRetryIn", map[string]any{"s": after}); !strings.Contains(body, ">"+html.EscapeString(s)+"<") {
					t.Errorf("the first countdown %q missing", s)
				}
				checkPolicy(t, w.Header().Get("Content-Security-Policy"), body)
			})
		}
	}
}

// checkPolicy: the policy allows the page's one style block and one
// script block by their hashes, and no other source of code.
func checkPolicy(t *testing.T, csp, body string) {
	t.Helper()
	styles, scripts := styleBlock.FindAllStringSubmatch(body, -1), scriptBlock.FindAllStringSubmatch(body, -1)
	if len(styles) != 1 || len(scripts) != 1 || strings.Count(body, "<script") != 1 || strings.Count(body, "<style") != 1 {
		t.Fatalf("%d style and %d script blocks", len(styles), len(scripts))
	}
	want := "default-src 'none'; style-src " + hash(styles[0][1]) + "; script-src " + hash(scripts[0][1]) +
		"; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	if csp != want {
		t.Errorf("CSP\n%s\nwant\n%s", csp, want)
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP allows unsafe code: %s", csp)
	}
}

// HEAD, as the page's own script asks while it waits: the same status and
// headers, no body.
func TestHead(t *testing.T) {
	r := request("ko")
	r.Method = http.MethodHead
	w := httptest.NewRecorder()
	Write(w, r, Joining)
	if w.Code != http.StatusServiceUnavailable || w.Body.Len() != 0 || w.Header().Get("Retry-After") == "" || w.Header().Get("Content-Language") != "ko" {
		t.Fatalf("%d %q %v", w.Code, w.Body.String(), w.Header())
	}
}

// The language comes as the waiting page's does: ?lang=, then the wr_lang
// cookie, then Accept-Language, else English.
func TestLanguageChoice(t *testing.T) {
	for _, c := range []struct{ query, cookie, accept, want string }{
		{"", "", "ko-KR,ko;q=0.9,en;q=0.8", "ko"},
		{"", "", "zh-TW", "zh-Hant"},
		{"", "", "zh-CN", "zh-Hans"},
		{"", "", "fr-FR", "en"},
		{"", "", "", "en"},
		{"", "ja", "ko", "ja"},
		{"es", "ja", "ko", "es"},
		{"xx", "", "ko", "ko"},
	} {
		r := request(c.accept)
		if c.query != "" {
			r.URL.RawQuery = "lang=" + url.QueryEscape(c.query)
		}
		if c.cookie != "" {
			r.AddCookie(&http.Cookie{Name: i18n.Cookie, Value: c.cookie})
		}
		w := httptest.NewRecorder()
		Write(w, r, AtGate)
		if got := w.Header().Get("Content-Language"); got != c.want {
			t.Errorf("%+v: %s", c, got)
		}
	}
}

// Who gets the page, who JSON from the caller.
func TestWantsPage(t *testing.T) {
	for _, c := range []struct {
		name, method string
		header       []string
		want         bool
	}{
		{"browser navigating", "GET", []string{"Accept", "text/html,*/*;q=0.8", "Sec-Fetch-Mode", "navigate"}, true},
		{"older browser, no Sec-Fetch", "GET", []string{"Accept", "text/html"}, true},
		{"a tool, no Accept", "GET", nil, true},
		{"HEAD", "HEAD", []string{"Accept", "text/html"}, true},
		{"asks for JSON", "GET", []string{"Accept", "application/json"}, false},
		{"JSON among others", "GET", []string{"Accept", "text/html, application/json"}, false},
		{"a script's fetch", "GET", []string{"Accept", "*/*", "Sec-Fetch-Mode", "cors"}, false},
		{"a same-origin fetch", "GET", []string{"Sec-Fetch-Mode", "same-origin"}, false},
		{"an image", "GET", []string{"Sec-Fetch-Mode", "no-cors"}, false},
		{"Authorization", "GET", []string{"Accept", "text/html", "Authorization", "Bearer x"}, false},
		{"POST", "POST", []string{"Accept", "text/html", "Sec-Fetch-Mode", "navigate"}, false},
	} {
		r := httptest.NewRequest(c.method, "/order", nil)
		for i := 0; i < len(c.header); i += 2 {
			r.Header.Set(c.header[i], c.header[i+1])
		}
		if got := WantsPage(r); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// written is what Write answers a request built from generated inputs.
func written(method, query, cookie, acceptLanguage, accept, mode string) (*httptest.ResponseRecorder, *http.Request) {
	r := httptest.NewRequest("GET", "/order", nil)
	r.Method = method
	r.URL.RawQuery = query
	for name, v := range map[string]string{"Cookie": cookie, "Accept-Language": acceptLanguage, "Accept": accept, "Sec-Fetch-Mode": mode} {
		if v != "" {
			r.Header.Set(name, v)
		}
	}
	w := httptest.NewRecorder()
	Write(w, r, Visitor(len(query)%int(visitors)))
	return w, r
}

// checkWritten: whatever a client sends (query, cookies, headers), the
// answer is one of the rendered pages, in a language of Langs, the one
// i18n.FromRequest picks: nothing of the request comes back in it.
func checkWritten(t *testing.T, w *httptest.ResponseRecorder, r *http.Request) {
	t.Helper()
	lang := w.Header().Get("Content-Language")
	if w.Code != http.StatusServiceUnavailable || !slices.Contains(i18n.Langs, lang) || lang != i18n.FromRequest(r) {
		t.Fatalf("%d %q for %q %v", w.Code, lang, r.URL.RawQuery, r.Header)
	}
	if r.Method == http.MethodHead {
		return
	}
	for _, page := range built().rendered {
		if string(page) == w.Body.String() {
			return
		}
	}
	t.Fatalf("the answer to %q %v is none of the rendered pages", r.URL.RawQuery, r.Header)
}

func FuzzWrite(f *testing.F) {
	f.Add("GET", "lang=ko", "wr_lang=ja", "es", "text/html", "navigate")
	f.Add("HEAD", "", "", "ko-KR,ko;q=0.9", "", "")
	f.Add("GET", "lang=%3Cscript%3E", "wr_lang=\"<b>\"", "zh-Hant-TW;q=0.1, <x>", "*/*", "cors")
	f.Add("GET", "lang=zh-Hans&lang=ko", "wr_lang=; other=1", strings.Repeat("ko,", 400), "text/html", "navigate")
	f.Add("GET", "lang=en-GB-oxendict-x-"+strings.Repeat("a", 70), "wr_lang=es-419", "*", "", "")
	f.Fuzz(func(t *testing.T, method, query, cookie, acceptLanguage, accept, mode string) {
		if method != http.MethodHead {
			method = http.MethodGet
		}
		w, r := written(method, query, cookie, acceptLanguage, accept, mode)
		checkWritten(t, w, r)
	})
}

// FuzzWrite's property over generated requests, with a fixed seed, so
// every test run checks thousands of variants, not only the seeds.
func TestWriteGeneratedRequests(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 16))
	pieces := []string{"ko", "ko-KR", "ja", "zh", "zh-Hant", "zh-TW", "zh-Hans-CN", "es-419", "en", "fr", "x", "*",
		";q=0.9", ";q=x", ",", " ", "<", ">", "\"", "'", "&", "%", "=", ";", "\x00", "\u00e9", "\u1100", "script", "lang", "wr_lang"}
	gen := func() string {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	for range 3000 {
		method := http.MethodGet
		if rng.IntN(4) == 0 {
			method = http.MethodHead
		}
		w, r := written(method, "lang="+url.QueryEscape(gen())+"&"+gen(), "wr_lang="+gen(), gen(), gen(), gen())
		checkWritten(t, w, r)
	}
}

func catalogs(t *testing.T) *i18n.Catalogs {
	t.Helper()
	p, err := build()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.rendered) != len(i18n.Langs)*int(visitors)*(FirstSpread+1) {
		t.Fatalf("%d pages rendered", len(p.rendered))
	}
	cat, err := messages()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}
