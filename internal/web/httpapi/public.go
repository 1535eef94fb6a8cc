package httpapi

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/crossorigin"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
	"github.com/waitroom/waitroom/internal/web/admission"
)

// The public queue API: enter, status, leave, done and a queue's info.
// Each handler decodes, asks once (enter: internal/web/admission, the others
// the store), and answers (ticket.go writes the tickets).

// enterRequest is the enter body: empty (or {}) for a browser or app
// that proves no identity, a site's join token, or, in insecure mode
// only, a plain user id; and a solved proof-of-work challenge when the
// queue asks for one.
type enterRequest struct {
	UserID    *string `json:"user_id"`
	JoinToken string  `json:"join_token"`
	Challenge string  `json:"challenge"`
	Nonce     string  `json:"nonce"`
	// Handoff takes over a place another device handed over: its token
	// or its code (handoff.go).
	Handoff string `json:"handoff"`
	// HumanToken is the human check's answer (the provider's widget
	// gives it), when the queue asked for one (human_check_required).
	HumanToken string `json:"human_token"`
}

func (s *Server) enter(w http.ResponseWriter, r *http.Request) {
	// Other sites' pages cannot plant places with their visitors'
	// browsers (package origin).
	if !s.origins.SameSite(r) {
		s.fail(w, r, errCrossSite)
		return
	}
	if !crossorigin.JSONBody(r) {
		s.fail(w, r, errNotJSON)
		return
	}
	req, err := decodeEnter(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q, ok := s.knownQueue(w, r)
	if !ok {
		return
	}
	res, err := s.admission.Enter(r.Context(), s.admissionRequest(r, q, req))
	switch {
	case res.ClearCookie:
		http.SetCookie(w, s.placeCookie(q, "", -1))
	case res.Cookie != "":
		s.setPlaceCookie(w, q, res.Cookie)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if res.Ticket.Status == queue.NotOpen {
		s.fail(w, r, notOpen(res.Ticket))
		return
	}
	s.writeTicket(w, r, q, res.Member, res.Token, res.Ticket, res.Ticket.FirstPollAfter())
}

// admissionRequest is the enter req asks for in queue q, with the place
// credential r carries (placeOf's) and its client's address.
func (s *Server) admissionRequest(r *http.Request, q string, req enterRequest) admission.Request {
	a := admission.Request{Queue: q, UserID: req.UserID, JoinToken: req.JoinToken, Challenge: req.Challenge, Nonce: req.Nonce,
		Handoff: req.Handoff, HumanToken: req.HumanToken, Addr: s.clientIP.Addr(r)}
	a.Credential, a.Bearer = s.credentialOf(r, q)
	return a
}

// notOpen is the answer to an enter before a scheduled opening's
// pre-queue window: when the window opens, and when the line does.
func notOpen(t queue.Ticket) *apiError {
	return &apiError{status: http.StatusForbidden, code: "not_open",
		message:      "the line is not open yet; come back at prequeue_from",
		opensAt:      rfc3339(t.OpensAt),
		prequeueFrom: rfc3339(t.PrequeueFrom)}
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	q, ok := s.knownQueue(w, r)
	if !ok {
		return
	}
	c, err := s.callerOf(r, q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := s.store.Status(r.Context(), q, c)
	if err != nil {
		s.failPlace(w, r, q, err)
		return
	}
	if t.Seq == 0 {
		t.Seq = c.Seq // the arrival number the credential carries
	}
	s.writeTicket(w, r, q, c.User, s.currentCredential(w, q, c, t), t, t.PollAfter())
}

// currentCredential is a fresh place credential for a waiting place whose
// caller proved it with one that names another arrival number (set as
// the cookie too), or "": the member entered again (a double click, a
// second tab), so an older credential names a place that is gone, and a
// page far back places itself by the number it holds. Without this, the
// page holding the older answer would go on placing itself ahead of its
// real place until the head reached it.
func (s *Server) currentCredential(w http.ResponseWriter, q string, c queue.Caller, t queue.Ticket) string {
	if !c.Credential || t.Status != queue.Waiting || t.Seq <= 0 || t.Seq == c.Seq {
		return ""
	}
	token := s.places.IssueGen(q, c.User, t.Seq, c.Gen)
	s.setPlaceCookie(w, q, token)
	return token
}

// leavePlace gives up the place the caller proves, and forgets the cookie.
func (s *Server) leavePlace(w http.ResponseWriter, r *http.Request) {
	if !s.origins.SameSite(r) {
		s.fail(w, r, errCrossSite)
		return
	}
	q, p, ok := s.knownPlace(w, r)
	if !ok {
		return
	}
	if err := s.store.Leave(r.Context(), q, queue.Caller{User: p.Member, Credential: true, Gen: p.Gen}); err != nil {
		s.failPlace(w, r, q, err)
		return
	}
	http.SetCookie(w, s.placeCookie(q, "", -1))
	w.WriteHeader(http.StatusNoContent)
}

// leaveUser removes a user named by a plain id, as the user leaving:
// insecure mode only.
func (s *Server) leaveUser(w http.ResponseWriter, r *http.Request) {
	if !s.insecureIDs {
		s.fail(w, r, errUserIDsDisabled)
		return
	}
	s.leaveNamed(w, r, func(ctx context.Context, q, user string) error {
		return s.store.Leave(ctx, q, queue.Caller{User: user})
	})
}

// leaveNamed takes the user named in the path out of the queue with leave
// (the user's leave, or the operator's removal).
func (s *Server) leaveNamed(w http.ResponseWriter, r *http.Request, leave func(ctx context.Context, queue, user string) error) {
	user, err := pathParam(r, "user_id")
	if err != nil {
		s.fail(w, r, queue.ErrInvalidUserID)
		return
	}
	if err := leave(r.Context(), chi.URLParam(r, "queue"), user); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// done is the order page saying an admitted user is done (it forwards the
// user's pass): the admission ends, so the pass is revoked and the slot
// goes to the next tick. A pass whose admission already ended is done
// already (204 again); a pass that is not valid, or for another queue, is
// refused.
func (s *Server) done(w http.ResponseWriter, r *http.Request) {
	q, ok := s.knownQueue(w, r)
	if !ok {
		return
	}
	token, ok := reqcheck.BearerToken(r)
	if !ok {
		s.fail(w, r, errInvalidPass)
		return
	}
	c, err := s.passes.Verify(token)
	if err != nil || c.Queue != q {
		s.fail(w, r, errInvalidPass)
		return
	}
	if _, err := s.store.Done(r.Context(), q, c.Subject, c.AdmittedAt); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type queueInfoResponse struct {
	Queue            string `json:"queue"`
	Waiting          int64  `json:"waiting"`
	Entered          int64  `json:"entered"`
	Active           int64  `json:"active"` // the same count: admissions that have not ended
	MaxActive        int    `json:"max_active"`
	Paused           bool   `json:"paused"`
	OpensAt          string `json:"opens_at,omitempty"`      // a scheduled opening, RFC 3339
	PrequeueFrom     string `json:"prequeue_from,omitempty"` // its pre-queue window's start
	RefillSize       int    `json:"refill_size"`
	RefillIntervalMS int64  `json:"refill_interval_ms"`
}

func (s *Server) queueInfo(w http.ResponseWriter, r *http.Request) {
	info, err := s.store.Info(r.Context(), chi.URLParam(r, "queue"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, queueInfoResponse{
		Queue:            info.Queue,
		Waiting:          info.Waiting,
		Entered:          info.Entered,
		Active:           info.Entered,
		MaxActive:        info.Settings.MaxActive,
		Paused:           info.Paused,
		OpensAt:          rfc3339(info.OpensAt),
		PrequeueFrom:     rfc3339(info.PrequeueFrom),
		RefillSize:       info.Settings.RefillSize,
		RefillIntervalMS: info.Settings.RefillInterval.Milliseconds(),
	})
}
