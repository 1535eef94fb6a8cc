package adminapi

import (
	"context"
	"net/http"

	"github.com/waitroom/waitroom/internal/ops/paid"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// DefencesFunc answers a queue's defences for the back office: the price
// of a place in force and what visitors paid over the last minutes
// (paid.Viewer.View).
type DefencesFunc func(ctx context.Context, queue string) (paid.Defences, error)

// storeDefences is the view without Options.Defences: the queue's
// human_check from the store, the price's defaults and nothing paid.
func storeDefences(s paid.Settings) DefencesFunc {
	return paid.Viewer{Policy: paid.Sources{Settings: s}.Policy}.View
}

// Defences answers GET /admin/v1/queues/{queue}/defences.
func (s *API) Defences(w http.ResponseWriter, r *http.Request) {
	q, ok := s.kit.KnownQueue(w, r, s.store)
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
	httpkit.WriteJSON(w, http.StatusOK, d)
}
