package publicapi

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/ops/paid"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// ChallengeResponse is a proof-of-work challenge (package challenge has
// the protocol).
type ChallengeResponse struct {
	Challenge  string `json:"challenge"`
	Difficulty int    `json:"difficulty"`
	ExpiresAt  string `json:"expires_at"` // RFC 3339
}

// Challenge issues a challenge at the difficulty the caller's
// network must pay now (the queue's, or the price of a place on a network
// that holds some, whichever is higher; 0 when none: any nonce solves
// it). Issuing costs an HMAC and one script call, which also applies the
// client's rate limits: without them one client could fetch thousands a
// second, each a Redis call.
func (s *API) Challenge(w http.ResponseWriter, r *http.Request) {
	q := chi.URLParam(r, "queue")
	// ErrUnknownQueue: 404; ErrRateLimited: 429, as an enter over the limit.
	d, err := s.store.Challenge(r.Context(), q, s.client(r))
	if err != nil {
		if errors.Is(err, queue.ErrHumanCheckRequired) {
			s.paid.Record(q, paid.Human(paid.HumanAsked))
		}
		s.fail(w, r, err)
		return
	}
	s.paid.Record(q, paid.Asked(d))
	c, expires := s.challenges.Issue(q, d)
	httpkit.WriteJSON(w, http.StatusOK, ChallengeResponse{Challenge: c, Difficulty: d, ExpiresAt: httpkit.RFC3339(expires)})
}
