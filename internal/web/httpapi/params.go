package httpapi

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
)

// What a request names besides its body: the queue and user of its path,
// and its client.

// knownQueue returns the {queue} of r's path, or answers 404
// queue_not_found and false when the store has no such queue: for the
// handlers that check the queue before anything else reads it.
func (s *Server) knownQueue(w http.ResponseWriter, r *http.Request) (string, bool) {
	q := chi.URLParam(r, "queue")
	if !s.store.Has(q) {
		s.fail(w, r, queue.ErrUnknownQueue)
		return "", false
	}
	return q, true
}

// pathParam returns a path parameter decoded. chi matches on the raw path
// when the URL has escapes Go would write differently (e.g. %2F), and then
// the parameter is still escaped.
func pathParam(r *http.Request, name string) (string, error) {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v, nil
	}
	return url.PathUnescape(v)
}

// clientKey names r's client in the rate limits: its address, or its /64
// for IPv6 (clientip.Key), so one host cannot spread its calls over its
// block's addresses to get a budget per address.
func (s *Server) clientKey(r *http.Request) string {
	return clientip.Key(s.clientIP.Addr(r))
}

// client names r's client in the enter limits and the price of a place
// (admission.Client).
func (s *Server) client(r *http.Request) queue.Caller {
	return s.admission.Client(s.clientIP.Addr(r))
}
