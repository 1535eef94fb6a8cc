package web

import (
	"crypto/sha256"
	"encoding/base64"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/web/httpkit"
)

var (
	// importFrom is a static import of a module beside the importer.
	importFrom = regexp.MustCompile(`(?m)^import [^;]*? from '\./([^']+)';$`)
	// preload is a page's <link rel="modulepreload">.
	preload = regexp.MustCompile(`<link rel="modulepreload" href="/_waitroom/static/([^"]+)">`)
	// entry is a page's module script.
	entry = regexp.MustCompile(`<script type="module" src="/_waitroom/static/([^"]+)"></script>`)
	// classic is a page's classic script (no imports).
	classic = regexp.MustCompile(`<script defer src="/_waitroom/static/([^"]+)"></script>`)
	// inline is a page's inline script.
	inline = regexp.MustCompile(`<script>([^<]*)</script>`)
)

// Each page has one inline script, its rescue, the same on both, before
// its module, and the Content-Security-Policy allows exactly it by its
// hash: a changed rescue that the policy does not name would never run.
func TestRescueIsAllowed(t *testing.T) {
	script, err := fs.ReadFile(Pages, "pages/script.html")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := fs.ReadFile(Static, "static/admin.html")
	if err != nil {
		t.Fatal(err)
	}
	var rescue string
	for name, html := range map[string]string{"pages/script.html": string(script), "static/admin.html": string(admin)} {
		m := inline.FindAllStringSubmatchIndex(html, -1)
		if len(m) != 1 {
			t.Fatalf("%s: %d inline scripts, want the rescue alone", name, len(m))
		}
		if e := entry.FindStringIndex(html); e == nil || e[0] < m[0][1] {
			t.Errorf("%s: the rescue is not before the module", name)
		}
		got := html[m[0][2]:m[0][3]]
		if rescue != "" && got != rescue {
			t.Errorf("%s: its rescue differs from the other page's", name)
		}
		rescue = got
	}
	sum := sha256.Sum256([]byte(rescue))
	want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	if !strings.Contains(httpkit.ContentSecurityPolicy, "script-src 'self' "+want+";") {
		t.Errorf("the policy's script-src does not allow the rescue: want %s in %q", want, httpkit.ContentSecurityPolicy)
	}
}

// Each page loads its entry module and preloads every module the entry
// imports, directly or not, so the browser fetches them all at once
// instead of one level of imports after another: a missing preload costs
// a round trip, and a preload of a module nothing imports is a fetch for
// nothing. Every import names a file that exists, and every script in
// static/ is a page's module or classic script but the proof-of-work
// worker.
func TestModulePreloads(t *testing.T) {
	static, err := fs.Sub(Static, "static")
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		t.Helper()
		b, err := fs.ReadFile(static, name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	used := map[string]bool{"pow-worker.js": true} // a classic worker, not a module
	// The waiting page's tags are pages/script.html, which every template
	// of it includes ({{.Script}}).
	script, err := fs.ReadFile(Pages, "pages/script.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"pages/script.html", "admin.html", "verify-draw.html"} {
		html := string(script)
		if page != "pages/script.html" {
			html = read(page)
		}
		for _, c := range classic.FindAllStringSubmatch(html, -1) {
			used[c[1]] = true
		}
		m := entry.FindAllStringSubmatch(html, -1)
		if len(m) != 1 {
			t.Fatalf("%s: %d module scripts, want one entry", page, len(m))
		}
		// The entry's module graph.
		graph := map[string]bool{}
		for todo := []string{m[0][1]}; len(todo) > 0; todo = todo[1:] {
			name := todo[0]
			if graph[name] {
				continue
			}
			graph[name] = true
			for _, imp := range importFrom.FindAllStringSubmatch(read(name), -1) {
				todo = append(todo, path.Clean(imp[1]))
			}
		}
		maps.Copy(used, graph)
		delete(graph, m[0][1]) // the script tag loads the entry itself
		var preloaded []string
		for _, p := range preload.FindAllStringSubmatch(html, -1) {
			preloaded = append(preloaded, p[1])
		}
		want := slices.Sorted(maps.Keys(graph))
		if slices.Sort(preloaded); !slices.Equal(preloaded, want) {
			t.Errorf("%s preloads %v; its entry imports %v", page, preloaded, want)
		}
	}
	scripts, err := fs.Glob(static, "*.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scripts {
		if !used[s] {
			t.Errorf("%s is no page's module", s)
		}
	}
}

// No module of the pages imports itself back, however long the way round.
// ES modules allow a circle, but then no module in it can be read, or
// loaded in a test, without all the others, and which of them runs first
// depends on which one a page happens to import first. A module that needs
// something of one above it gets it as a parameter (waiting-flow.js passes
// its enter to the modules of its answers).
func TestNoImportCircle(t *testing.T) {
	static, err := fs.Sub(Static, "static")
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := fs.Glob(static, "*.js")
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string][]string{}
	for _, s := range scripts {
		b, err := fs.ReadFile(static, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range importFrom.FindAllStringSubmatch(string(b), -1) {
			imports[s] = append(imports[s], path.Clean(imp[1]))
		}
	}
	if len(imports) == 0 {
		t.Fatal("no imports found: has importFrom stopped matching?")
	}
	if circle := importCircle(imports); circle != nil {
		t.Errorf("import circle: %s", strings.Join(circle, " -> "))
	}
}

func TestImportCircleFinds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		imports map[string][]string
		want    []string
	}{
		{"none", map[string][]string{"a": {"b", "c"}, "b": {"c"}}, nil},
		{"itself", map[string][]string{"a": {"a"}}, []string{"a", "a"}},
		{"two", map[string][]string{"a": {"b"}, "b": {"a"}}, []string{"a", "b", "a"}},
		{"below the entry", map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"d"}, "d": {"b"}}, []string{"b", "c", "d", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := importCircle(tc.imports); !slices.Equal(got, tc.want) {
				t.Errorf("importCircle = %v, want %v", got, tc.want)
			}
		})
	}
}

// importCircle returns a circle in imports (a module -> the modules it
// imports): the modules along it, the first again at the end. nil: none.
// A depth-first walk; a module met again while its own imports are still
// being walked closes a circle.
func importCircle(imports map[string][]string) []string {
	const (
		unseen = iota
		walking
		done
	)
	mark := map[string]int{}
	var trail []string // the modules being walked, outermost first
	var walk func(m string) []string
	walk = func(m string) []string {
		mark[m] = walking
		trail = append(trail, m)
		for _, next := range imports[m] {
			switch mark[next] {
			case walking:
				return append(slices.Clone(trail[slices.Index(trail, next):]), next)
			case unseen:
				if circle := walk(next); circle != nil {
					return circle
				}
			}
		}
		trail = trail[:len(trail)-1]
		mark[m] = done
		return nil
	}
	for _, m := range slices.Sorted(maps.Keys(imports)) {
		if mark[m] == unseen {
			if circle := walk(m); circle != nil {
				return circle
			}
		}
	}
	return nil
}
