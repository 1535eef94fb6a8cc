package pages

import (
	"bytes"
	stdtemplate "html/template"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	template "github.com/DataDog/datadog-agent/pkg/template/html"

	"github.com/waitroom/waitroom/internal/web/i18n"
)

func newPages(t *testing.T, dir string, queues ...string) (*Pages, error) {
	t.Helper()
	msgs, err := Messages()
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Project: ProjectFS(), Messages: msgs, Dir: dir, Queues: queues})
}

func render(t *testing.T, p *Pages, queue, lang string, text Text) string {
	t.Helper()
	var b bytes.Buffer
	if err := p.Render(&b, queue, lang, text); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The project's page renders in every language, with its words, the
// script, and the queue's text in the language asked for (else English).
func TestProjectPage(t *testing.T) {
	p, err := newPages(t, "")
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := Messages()
	text := Text{Title: map[string]string{"en": "Seollal holiday trains: Seoul → Busan", "ko": "설 명절 열차: 서울 → 부산"}, Message: map[string]string{"en": "Sales open at 07:00"}}
	for _, lang := range i18n.Langs {
		page := render(t, p, "trains", lang, text)
		for _, want := range []string{
			`<html lang="` + lang + `">`,
			entryScript,
			`<script type="application/json" id="wr-page">{"lang":"` + lang + `"`,
			`aria-pressed="true">` + i18n.Name(lang) + `</button>`,
			">" + msgs.Text(lang, "yourNumber", nil) + "<",
			"Sales open at 07:00",
		} {
			if !strings.Contains(page, want) {
				t.Errorf("%s: the page lacks %q", lang, want)
			}
		}
		title := text.Title["en"]
		if lang == "ko" {
			title = text.Title["ko"]
		}
		if !strings.Contains(page, `<p id="queue-title" class="queue-title">`+title+`</p>`) {
			t.Errorf("%s: the title is not %q", lang, title)
		}
	}
	// No text: the header is hidden.
	if page := render(t, p, "trains", "en", Text{}); !strings.Contains(page, `<header id="queue-text" class="queue-text" hidden>`) {
		t.Error("a queue without text shows its header")
	}
}

// A title or message is an operator's input shown to the public: in the
// markup it is escaped text, in the script's data JSON that cannot end
// the <script> element.
func TestTextEscaped(t *testing.T) {
	p, err := newPages(t, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, evil := range []string{
		`<script>alert(1)</script>`,
		`</script><script>alert(1)</script>`,
		`"><img src=x onerror=alert(1)>`,
		`{{.Script}}`,
		`<!--`,
		"\u2028</script>",
	} {
		page := render(t, p, "q", "en", Text{Title: map[string]string{"en": evil}, Message: map[string]string{"en": evil}})
		// The page's data, its rescue and the entry module: no more.
		if strings.Count(page, "<script") != 3 || strings.Contains(page, "<img src=x") || strings.Contains(page, "alert(1)</script>") {
			t.Errorf("%q is not escaped:\n%s", evil, page)
		}
		if strings.Count(page, entryScript) != 1 {
			t.Errorf("%q: the script tag is there %d times", evil, strings.Count(page, entryScript))
		}
	}
}

// The shipped example directory renders: its waiting.html for any queue,
// queues/default/waiting.html for default.
func TestExampleDir(t *testing.T) {
	p, err := newPages(t, filepath.Join("..", "..", "..", "deploy", "pages-example"), "default", "trains")
	if err != nil {
		t.Fatal(err)
	}
	text := Text{Title: map[string]string{"en": "Trains"}}
	site := render(t, p, "trains", "ja", text)
	if !strings.Contains(site, `/_waitroom/site/site.css`) || !strings.Contains(site, `<h1 id="queue-title">Trains</h1>`) || !strings.Contains(site, entryScript) {
		t.Errorf("the example's waiting.html:\n%s", site)
	}
	own := render(t, p, "default", "es", text)
	if strings.Contains(own, "site.css") || !strings.Contains(own, `<html lang="es">`) || !strings.Contains(own, entryScript) {
		t.Errorf("the example's queues/default/waiting.html:\n%s", own)
	}
}

// A template that would fail a visitor fails start-up instead, naming its
// file and, where there is one, its line.
func TestTemplateErrors(t *testing.T) {
	const ok = `<!doctype html><html><head>{{.Script}}</head><body>{{.Title}}</body></html>`
	cases := []struct {
		name, file, src string
		want            []string
	}{
		{"parse error", "waiting.html", "<html>\n<head>{{.Script}}</head>\n<body>{{if .Title}}</body>", []string{"waiting.html:3:", "unexpected EOF"}},
		{"unknown function", "waiting.html", "<html>\n{{.Script}}\n{{nope .Title}}", []string{"waiting.html:3:", `"nope" not defined`}},
		{"unknown field", "waiting.html", "<html>{{.Script}}\n\n{{.Nope}}</html>", []string{"waiting.html:3:", "Nope"}},
		{"unknown message", "waiting.html", "<html>{{.Script}}\n{{.Messages.noSuchKey}}</html>", []string{"waiting.html:2:", "noSuchKey"}},
		{"no script", "waiting.html", "<html><body>{{.Title}}</body></html>", []string{"waiting.html", "{{.Script}}", "0 times"}},
		{"script twice", "waiting.html", "<html>{{.Script}}{{.Script}}</html>", []string{"waiting.html", "2 times"}},
		{"script in a comment", "waiting.html", "<html><!-- {{.Script}} --></html>", []string{"waiting.html", "0 times"}},
		{"a queue's", filepath.Join("queues", "trains", "waiting.html"), "<html>\n\n\n{{end}}", []string{filepath.Join("queues", "trains", "waiting.html") + ":4:"}},
		{"an unknown queue", filepath.Join("queues", "trians", "waiting.html"), ok, []string{"trians", "no queue"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			name := filepath.Join(dir, c.file)
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(name, []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := newPages(t, dir, "trains")
			if err == nil {
				t.Fatal("New accepted it")
			}
			for _, w := range append(c.want, dir) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if _, err := newPages(t, filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a WAITROOM_PAGES_DIR that does not exist was accepted")
	}
}

// The operator's files: a regular file in the directory, nothing else.
func TestServeSite(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "pages")
	for name, body := range map[string]string{
		"pages/logo.svg":              "<svg/>",
		"pages/img/a.png":             "png",
		"pages/.env":                  "SECRET=1",
		"pages/.git/config":           "secret",
		"pages/waiting.html":          `<html>{{.Script}}</html>`,
		"pages/queues/q/waiting.html": `<html>{{.Script}}</html>`,
		"pages/queues/q/banner.jpg":   "jpg",
		"secret.txt":                  "outside",
	} {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	p, err := newPages(t, dir, "q")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]int{
		"logo.svg":              200,
		"img/a.png":             200,
		"queues/q/banner.jpg":   200,
		"":                      404,
		"img":                   404,
		"img/":                  404,
		".env":                  404,
		".git/config":           404,
		"waiting.html":          404,
		"queues/q/waiting.html": 404,
		"link.txt":              404,
		"../secret.txt":         404,
		"img/../../secret.txt":  404,
		"nope.png":              404,
	}
	for name, want := range cases {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.Path = SitePrefix + name
		p.ServeSite(w, r, http.NotFound)
		if w.Code != want {
			t.Errorf("%q: %d, want %d", name, w.Code, want)
		}
		if w.Code == 200 && w.Header().Get("Cache-Control") == "" {
			t.Errorf("%q: no Cache-Control", name)
		}
		if strings.Contains(w.Body.String(), "outside") || strings.Contains(w.Body.String(), "SECRET") {
			t.Errorf("%q served %q", name, w.Body.String())
		}
	}
}

// Whatever the path, a name siteName lets through is a plain relative
// path inside the directory: no dot segment or hidden name, no
// backslash or NUL, no template.
func FuzzSiteName(f *testing.F) {
	for _, s := range []string{"logo.svg", "../x", "a/../../b", ".env", "a//b", "/abs", "a\\..\\b", "waiting.html", "x/waiting.html", "%2e%2e/x", "a/./b", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, ok := siteName(SitePrefix + s)
		if !ok {
			return
		}
		if name != s || strings.HasPrefix(name, "/") || strings.ContainsAny(name, "\\\x00") || filepath.Base(name) == "waiting.html" {
			t.Fatalf("siteName(%q) = %q", s, name)
		}
		for _, seg := range strings.Split(name, "/") {
			if seg == "" || seg == "." || seg == ".." || strings.HasPrefix(seg, ".") {
				t.Fatalf("siteName(%q) = %q: segment %q", s, name, seg)
			}
		}
	})
}

// The fork of html/template the pages use (for the binary's size) must
// escape as the standard library does: the project's and the example's
// templates, rendered with generated hostile titles and messages in every
// language, give the same bytes from both. When a Go release fixes
// html/template, this is the test that says whether the fork has the fix
// for what our pages do.
func TestForkRendersAsTheStandardLibrary(t *testing.T) {
	p, err := newPages(t, "")
	if err != nil {
		t.Fatal(err)
	}
	project, err := fs.ReadFile(ProjectFS(), "waiting.html")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "pages-example", "waiting.html"))
	if err != nil {
		t.Fatal(err)
	}
	pieces := []string{"<script>", "</script>", "\"", "'", "`", "&amp;", "<!--", "]]>", "javascript:", "{{.Script}}",
		"\u2028", "\x00", "<a href=\"x\">", "é", "한국어", "\\", "</title>", "${x}", "onerror=alert(1)", " "}
	r := rand.New(rand.NewPCG(27, 1))
	hostile := func() string {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	for name, src := range map[string][]byte{"project": project, "example": example} {
		fork := template.Must(template.New(name).Option("missingkey=error").Parse(string(src)))
		std := stdtemplate.Must(stdtemplate.New(name).Option("missingkey=error").Parse(string(src)))
		for i := range 300 {
			lang := i18n.Langs[i%len(i18n.Langs)]
			d := p.data("q", lang, Text{Title: map[string]string{lang: hostile()}, Message: map[string]string{lang: hostile()}}, nil)
			var a, b bytes.Buffer
			errA, errB := fork.Execute(&a, d), std.Execute(&b, d)
			if (errA == nil) != (errB == nil) || a.String() != b.String() {
				t.Fatalf("%s, %s: the fork and html/template differ\nfork (%v):\n%s\nstd (%v):\n%s", name, lang, errA, a.String(), errB, b.String())
			}
		}
	}
}
