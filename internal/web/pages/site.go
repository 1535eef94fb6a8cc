package pages

import (
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// SitePrefix is where the operator's directory is served.
const SitePrefix = "/_waitroom/site/"

// ServeSite serves one file of the operator's directory under
// SitePrefix: a regular file only, never a directory listing, a hidden
// name (a segment starting with "."), or a template (waiting.html), and
// never a file outside the directory, whatever the path or a symlink
// says (os.Root). notFound answers anything else, and every request
// without a directory.
func (p *Pages) ServeSite(w http.ResponseWriter, r *http.Request, notFound http.HandlerFunc) {
	name, ok := siteName(r.URL.Path)
	if !ok || p.root == nil {
		notFound(w, r)
		return
	}
	f, err := p.root.Open(name)
	if err != nil {
		notFound(w, r)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		notFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	http.ServeContent(w, r, info.Name(), info.ModTime(), f)
}

// siteName is the file a request path under SitePrefix names, and
// whether it may be served.
func siteName(urlPath string) (string, bool) {
	name, ok := strings.CutPrefix(urlPath, SitePrefix)
	if !ok || !fs.ValidPath(name) || name == "." || strings.ContainsAny(name, "\\\x00") {
		return "", false
	}
	for _, seg := range strings.Split(name, "/") {
		if strings.HasPrefix(seg, ".") {
			return "", false
		}
	}
	if path.Base(name) == "waiting.html" {
		return "", false
	}
	return name, true
}
