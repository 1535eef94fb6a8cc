package publicapi

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"

	"github.com/waitroom/waitroom/api"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// openAPIETag names this build's document, so clients revalidate it with
// one short request instead of fetching it again.
var openAPIETag = func() string {
	sum := sha256.Sum256(api.OpenAPI)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}()

// OpenAPI serves the API's contract (api/openapi.yaml). It changes only
// with a deploy: caches may keep it five minutes, then revalidate.
func (s *API) OpenAPI(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("ETag", openAPIETag)
	if httpkit.ETagMatches(r.Header.Get("If-None-Match"), openAPIETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/yaml")
	_, _ = w.Write(api.OpenAPI)
}
