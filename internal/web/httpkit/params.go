package httpkit

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// What a request names besides its body: the queue and user of its path,
// and the version of a document it holds.

// Assets is where the pages' scripts and styles are served.
const Assets = "/_waitroom/static/"

// Queues are the queues a service has (*queue.Store).
type Queues interface {
	Has(queue string) bool
}

// KnownQueue returns the {queue} of r's path, or answers 404
// queue_not_found and false when qs has no such queue: for the handlers
// that check the queue before anything else reads it.
func (s *Responder) KnownQueue(w http.ResponseWriter, r *http.Request, qs Queues) (string, bool) {
	q := chi.URLParam(r, "queue")
	if !qs.Has(q) {
		s.Fail(w, r, queue.ErrUnknownQueue)
		return "", false
	}
	return q, true
}

// PathParam returns a path parameter decoded. chi matches on the raw path
// when the URL has escapes Go would write differently (e.g. %2F), and then
// the parameter is still escaped.
func PathParam(r *http.Request, name string) (string, error) {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v, nil
	}
	return url.PathUnescape(v)
}

// PathUser returns the queue and the user the path names (a user
// leaving in insecure mode, or an operator's removal); the user's error
// is invalid_user_id.
func PathUser(r *http.Request) (q, user string, err error) {
	user, err = PathParam(r, "user_id")
	if err != nil {
		return "", "", queue.ErrInvalidUserID
	}
	return chi.URLParam(r, "queue"), user, nil
}

// ETagMatches reports whether an If-None-Match value names etag: "*", or
// a list of tags compared weakly (RFC 9110, section 13.1.2).
func ETagMatches(ifNoneMatch, etag string) bool {
	for _, t := range strings.Split(ifNoneMatch, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
