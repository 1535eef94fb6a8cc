package publicapi

import (
	"net/http"
	"time"

	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// The line as a public document (linedoc): the same bytes and headers for
// everyone, cacheable by nginx or a CDN for a second, made from the
// replica's snapshot with no Redis command.

var (
	lineCacheHeader = []string{"public, max-age=1"}
	anyOriginHeader = []string{"*"}
)

// Line answers GET /api/v1/queues/{queue}/line: 200 with the document, 304
// for its ETag, or 503 (not cached) while the replica holds no fresh
// snapshot of the line.
func (s *API) Line(w http.ResponseWriter, r *http.Request) {
	q, ok := s.kit.KnownQueue(w, r, s.store)
	if !ok {
		return
	}
	doc, err := s.lines.Get(q, time.Now())
	if err != nil {
		s.fail(w, r, httpkit.ErrUnavailable)
		return
	}
	h := w.Header()
	// Public: any page may read it, and no answer depends on who asks, so
	// nothing varies (the CORS middleware's Vary: Origin is dropped).
	h.Del("Vary")
	h["Access-Control-Allow-Origin"] = anyOriginHeader
	h["Cache-Control"] = lineCacheHeader
	h["Etag"] = []string{doc.ETag}
	if httpkit.ETagMatches(r.Header.Get("If-None-Match"), doc.ETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Type"] = httpkit.JSONHeader
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc.Body)
}
