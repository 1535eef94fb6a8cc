package publicapi

import (
	"crypto/sha256"
	"encoding/base64"
	"io/fs"
	"net/http"
	"strings"

	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// assetTags are the ETags of the files under httpkit.Assets, made once from
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

// Asset serves one file under httpkit.Assets: never a directory listing. The
// names are not content-hashed, so browsers revalidate (no-cache) and the
// ETag makes that a 304.
func (s *API) Asset(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, httpkit.Assets)
	tag, ok := s.assetTags[name]
	if !ok {
		s.fail(w, r, httpkit.ErrNotFound)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", tag)
	http.ServeFileFS(w, r, s.static, name)
}
