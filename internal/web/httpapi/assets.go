package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"io/fs"
	"net/http"
	"strings"
)

// assets is where the pages' scripts and styles are served.
const assets = "/_waitroom/static/"

// assetTags are the ETags of the files under assets, made once from
// their content: the pages load a dozen modules, and a browser that has
// them asks with If-None-Match and gets 304s instead of the files.
type assetTags map[string]string

func newAssetTags(static fs.FS) assetTags {
	tags := assetTags{}
	_ = fs.WalkDir(static, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := fs.ReadFile(static, path)
		if err != nil {
			return nil
		}
		sum := sha256.Sum256(b)
		tags[path] = `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
		return nil
	})
	return tags
}

// asset serves one file under assets: never a directory listing. The
// names are not content-hashed, so browsers revalidate (no-cache) and the
// ETag makes that a 304.
func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, assets)
	tag, ok := s.assetTags[name]
	if !ok {
		s.fail(w, r, errNotFound)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", tag)
	http.ServeFileFS(w, r, s.static, name)
}
