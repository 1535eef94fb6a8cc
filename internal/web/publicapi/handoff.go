package publicapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// Moving a place to another device (internal/trust/handoff): the holder asks
// for a hand-over, shows it as a QR code or a code, and the other device
// enters with it.

// errHandoffDisabled: hand-overs are not offered (Options.Handoffs).
var errHandoffDisabled = &httpkit.Error{Status: http.StatusNotFound, Code: "not_found", Message: "no such resource"}

// HandoffResponse is a new hand-over.
type HandoffResponse struct {
	Queue string `json:"queue"`
	Token string `json:"token"` // for links: /q/{queue}?handoff={token}
	// Code is the token's short form for typing, "ABCD-EFGH" (case,
	// spaces and the dash do not matter).
	Code      string `json:"code"`
	ExpiresAt string `json:"expires_at"`
	// Path is the waiting page that takes the place over (the QR code's
	// link, on this host).
	Path string `json:"path"`
}

// CreateHandoff makes a hand-over of the place the caller proves.
func (s *API) CreateHandoff(w http.ResponseWriter, r *http.Request) {
	if s.handoffs == nil {
		s.fail(w, r, errHandoffDisabled)
		return
	}
	if !s.origins.SameSite(r) {
		s.fail(w, r, errCrossSite)
		return
	}
	q, p, ok := s.knownPlace(w, r)
	if !ok {
		return
	}
	h, err := s.handoffs.Create(r.Context(), q, p.Member, p.Gen)
	if err != nil {
		s.failPlace(w, r, q, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpkit.WriteJSON(w, http.StatusCreated, HandoffResponse{
		Queue:     q,
		Token:     h.Token,
		Code:      handoff.FormatCode(h.Code),
		ExpiresAt: h.Expires.UTC().Format(time.RFC3339),
		Path:      handoffPath(q, h.Token),
	})
}

func handoffPath(q, token string) string { return handoff.Path(q, token) }

// HandoffQR is the QR code of the caller's live hand-over ?token=, a PNG
// of the link to the waiting page on the public URL (never this request's
// Host), limited per place and per client. The request log writes paths
// only, never queries (httpkit.Responder.LogRequests), so the token stays out of the logs.
func (s *API) HandoffQR(w http.ResponseWriter, r *http.Request) {
	if s.handoffs == nil {
		s.fail(w, r, errHandoffDisabled)
		return
	}
	q, p, ok := s.knownPlace(w, r)
	if !ok {
		return
	}
	png, err := s.handoffs.QR(r.Context(), q, p.Member, r.URL.Query().Get("token"), s.clientKey(r))
	if errors.Is(err, handoff.ErrNoPublicURL) {
		err = errHandoffDisabled
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "image/png")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(png)
}

// failPlace is fail for a call that proved a place: a credential older
// than its place's move (queue.ErrMoved) is answered place_moved, and a
// browser's cookie holding it is cleared, so the page can join afresh.
func (s *API) failPlace(w http.ResponseWriter, r *http.Request, q string, err error) {
	if errors.Is(err, queue.ErrMoved) {
		if _, bearer := reqcheck.BearerToken(r); !bearer {
			http.SetCookie(w, s.placeCookie(q, "", -1))
		}
	}
	s.fail(w, r, err)
}
