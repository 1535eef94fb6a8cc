package agent

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// MaxGzipBytes is the agent's budget on the wire: a site pays it on the
// page that books, before the user clicks.
const MaxGzipBytes = 15 * 1024

// Both forms of the embedded agent stay within the budget, gzipped as a
// CDN or waitroom's proxy would send them.
func TestSize(t *testing.T) {
	s := Default()
	for name, body := range map[string][]byte{"module": s.module, "classic": s.classic} {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		_, _ = zw.Write(body)
		_ = zw.Close()
		t.Logf("%s: %d bytes, %d gzipped (budget %d)", name, len(body), b.Len(), MaxGzipBytes)
		if b.Len() > MaxGzipBytes {
			t.Errorf("the agent's %s form is %d bytes gzipped, over the %d budget", name, b.Len(), MaxGzipBytes)
		}
	}
}

// The classic form is the module without its module lines: no export and
// no import.meta, which a classic script cannot parse, and it sets
// window.waitroom.
func TestEmbedded(t *testing.T) {
	s := Default()
	c := string(s.classic)
	for _, bad := range []string{"export ", "import.meta", "import "} {
		if strings.Contains(c, "\n"+bad) || strings.Contains(c, bad+"{") || strings.Contains(c, "import.meta") {
			t.Errorf("the classic form contains %q", bad)
		}
	}
	if !strings.Contains(c, "window.waitroom = waitroomAgent(") || !strings.Contains(string(s.module), "export default waitroom;") {
		t.Error("a form lost its entry")
	}
	if _, err := New([]byte("function waitroomAgent() {}\n")); err == nil {
		t.Error("a source without its module mark was taken")
	}
}

// Every address gets the script; only the current hash is cached for a
// day, so a page that pasted an older one, or none, picks up a release at
// once. Generated values of v (and other queries) never get the day.
func TestCaching(t *testing.T) {
	s := Default()
	get := func(path string, h ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		for i := 0; i+1 < len(h); i += 2 {
			r.Header.Set(h[i], h[i+1])
		}
		w := httptest.NewRecorder()
		if strings.HasPrefix(path, ClassicPath) {
			s.Classic(w, r)
		} else {
			s.Module(w, r)
		}
		return w
	}
	cur := get(ModulePath + "?v=" + s.V())
	if cur.Code != 200 || cur.Header().Get("Cache-Control") != "public, max-age=86400" ||
		cur.Header().Get("Content-Type") != "text/javascript; charset=utf-8" || !bytes.Equal(cur.Body.Bytes(), s.module) {
		t.Fatalf("current: %d %q %q", cur.Code, cur.Header().Get("Cache-Control"), cur.Header().Get("Content-Type"))
	}
	if w := get(ClassicPath+"?v="+s.V(), "If-None-Match", cur.Header().Get("ETag")); w.Code != 304 {
		t.Fatalf("revalidated: %d", w.Code)
	}
	rng := rand.New(rand.NewPCG(7, 39))
	variants := []string{"", "?v=", "?v=" + s.V() + "x", "?v=" + strings.ToUpper(s.V()), "?V=" + s.V(), "?v=old&v=" + s.V(), "?x=1"}
	for range 200 {
		b := make([]byte, rng.IntN(20))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		variants = append(variants, "?v="+url.QueryEscape(string(b)))
	}
	for _, v := range variants {
		for _, p := range []string{ModulePath, ClassicPath} {
			w := get(p + v)
			if w.Code != 200 || w.Header().Get("Cache-Control") != "no-cache" || w.Header().Get("ETag") == "" {
				t.Fatalf("%s%s: %d %q", p, v, w.Code, w.Header().Get("Cache-Control"))
			}
		}
	}
}

// A change of the source changes v: a release with a new agent is a new
// address.
func TestVersionFollowsContent(t *testing.T) {
	src := []byte("function waitroomAgent(u) { return {}; }\n// ---- module ----\nexport default 1;\n")
	a, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(append([]byte("// changed\n"), src...))
	if a.V() == b.V() || a.V() == "" {
		t.Fatalf("v %q and %q", a.V(), b.V())
	}
	w := httptest.NewRecorder()
	a.Version(w, httptest.NewRequest("GET", VersionPath, nil))
	want := fmt.Sprintf(`{"v":%q,"module":"%s?v=%s","classic":"%s?v=%s"}`, a.V(), ModulePath, a.V(), ClassicPath, a.V())
	if got := strings.TrimSpace(w.Body.String()); got != want || w.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("version: %s, want %s", got, want)
	}
	if w.Header().Get("Content-Type") != "application/json" {
		t.Fatal(w.Header().Get("Content-Type"))
	}
}
