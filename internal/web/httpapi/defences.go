package httpapi

import (
	"context"
	"net/http"

	"github.com/waitroom/waitroom/internal/ops/paid"
)

// DefencesFunc answers a queue's defences for the back office: the price
// of a place in force and what visitors paid over the last minutes
// (paid.Viewer.View).
type DefencesFunc func(ctx context.Context, queue string) (paid.Defences, error)

// PaidRecorder records what visitors paid: *paid.Recorder. The enter and
// challenge handlers call it once per event.
type PaidRecorder interface {
	Record(queue string, e paid.Event)
}

// initDefences takes o's recorder and view, or stand-ins: a recorder of
// nothing, storeDefences.
func (s *Server) initDefences(o Options) {
	s.paid, s.defencesView = o.Paid, o.Defences
	if s.paid == nil {
		s.paid = (*paid.Recorder)(nil) // records nothing
	}
	if s.defencesView == nil {
		s.defencesView = storeDefences(s.inspector)
	}
}

// storeDefences is the view without Options.Defences: the queue's
// human_check from the store, the price's defaults and nothing paid.
func storeDefences(s paid.Settings) DefencesFunc {
	return paid.Viewer{Policy: paid.Sources{Settings: s}.Policy}.View
}

// defences answers GET /admin/v1/queues/{queue}/defences.
func (s *Server) defences(w http.ResponseWriter, r *http.Request) {
	q, ok := s.knownQueue(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminRedisTimeout)
	defer cancel()
	d, err := s.defencesView(ctx, q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}
