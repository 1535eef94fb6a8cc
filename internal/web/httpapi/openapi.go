package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/waitroom/waitroom/api"
)

// openAPIETag names this build's document, so clients revalidate it with
// one short request instead of fetching it again.
var openAPIETag = func() string {
	sum := sha256.Sum256(api.OpenAPI)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}()

// openAPI serves the API's contract (api/openapi.yaml). It changes only
// with a deploy: caches may keep it five minutes, then revalidate.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("ETag", openAPIETag)
	if etagMatches(r.Header.Get("If-None-Match"), openAPIETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/yaml")
	_, _ = w.Write(api.OpenAPI)
}

// etagMatches reports whether an If-None-Match value names etag: "*", or
// a list of tags compared weakly (RFC 9110, section 13.1.2).
func etagMatches(ifNoneMatch, etag string) bool {
	for _, t := range strings.Split(ifNoneMatch, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
