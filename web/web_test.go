package web

import (
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"testing"
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
)

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
	for _, page := range []string{"pages/script.html", "admin.html"} {
		html := string(script)
		if page == "admin.html" {
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
