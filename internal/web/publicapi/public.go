package publicapi

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/crossorigin"
	"github.com/waitroom/waitroom/internal/web/admission"
	"github.com/waitroom/waitroom/internal/web/httpkit"
	"github.com/waitroom/waitroom/internal/web/i18n"
)

// The public queue API: enter, status, leave, done and a queue's info.
// Each handler decodes, asks once (enter: internal/web/admission, the others
// the store), and answers (ticket.go writes the tickets).

// EnterRequest is the enter body: empty (or {}) for a browser or app
// that proves no identity, a site's join token, or, in insecure mode
// only, a plain user id; and a solved proof-of-work challenge when the
// queue asks for one.
type EnterRequest struct {
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
	// InviteCode is an invitation code: a valid one puts the place in
	// the code's lane (internal/web/admission).
	InviteCode string `json:"invite_code"`
}

// The public API's own refusals.
var (
	errQueueRequired = &httpkit.Error{Status: http.StatusBadRequest, Code: "queue_required", Message: "name the queue the pass must be for: ?queue=", Field: "queue"}
	errInvalidReturn = &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_return", Message: "return must be a path on this site"}
	errCrossSite     = &httpkit.Error{Status: http.StatusForbidden, Code: "cross_site_request", Message: "this request must come from the waiting room's own page or an allowed origin"}
	errNotJSON       = &httpkit.Error{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Message: "send the body as Content-Type: application/json"}
)

// Enter takes a place in the line, or gives the caller's own back.
func (s *API) Enter(w http.ResponseWriter, r *http.Request) {
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
	q, ok := s.kit.KnownQueue(w, r, s.store)
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
	if errors.Is(err, queue.ErrSaleClosed) {
		c, cerr := s.closing(r, q)
		if cerr == nil {
			err = httpkit.SaleClosed(c, i18n.FromRequest(r))
		}
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
func (s *API) admissionRequest(r *http.Request, q string, req EnterRequest) admission.Request {
	a := admission.Request{Queue: q, UserID: req.UserID, JoinToken: req.JoinToken, Challenge: req.Challenge, Nonce: req.Nonce,
		Handoff: req.Handoff, HumanToken: req.HumanToken, InviteCode: req.InviteCode, Addr: s.clientIP.Addr(r)}
	a.Credential, a.Bearer = s.credentialOf(r, q)
	return a
}

// notOpen is the answer to an enter before a scheduled opening's
// pre-queue window: when the window opens, and when the line does.
func notOpen(t queue.Ticket) *httpkit.Error {
	return &httpkit.Error{Status: http.StatusForbidden, Code: "not_open",
		Message:      "the line is not open yet; come back at prequeue_from",
		OpensAt:      httpkit.RFC3339(t.OpensAt),
		PrequeueFrom: httpkit.RFC3339(t.PrequeueFrom)}
}

func (s *API) Status(w http.ResponseWriter, r *http.Request) {
	q, ok := s.kit.KnownQueue(w, r, s.store)
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
func (s *API) currentCredential(w http.ResponseWriter, q string, c queue.Caller, t queue.Ticket) string {
	if !c.Credential || t.Status != queue.Waiting || t.Seq <= 0 || t.Seq == c.Seq {
		return ""
	}
	token := s.places.IssueGen(q, c.User, t.Seq, c.Gen)
	s.setPlaceCookie(w, q, token)
	return token
}

// LeavePlace gives up the place the caller proves, and forgets the cookie.
func (s *API) LeavePlace(w http.ResponseWriter, r *http.Request) {
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

// LeaveUser removes a user named by a plain id, as the user leaving:
// insecure mode only.
func (s *API) LeaveUser(w http.ResponseWriter, r *http.Request) {
	if !s.insecureIDs {
		s.fail(w, r, httpkit.ErrUserIDsDisabled)
		return
	}
	q, user, err := httpkit.PathUser(r)
	if err == nil {
		err = s.store.Leave(r.Context(), q, queue.Caller{User: user})
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Done is the order page saying an admitted user is done (it forwards the
// user's pass): the admission ends, so the pass is revoked and the slot
// goes to the next tick. A pass whose admission already ended is done
// already (204 again); a pass that is not valid, or for another queue, is
// refused. It is the done command (commands.go): audited and counted
// like the page's Waitroom-Command.
func (s *API) Done(w http.ResponseWriter, r *http.Request) {
	q, ok := s.kit.KnownQueue(w, r, s.store)
	if !ok {
		return
	}
	if _, err := s.runCommand(r, q, gate.CommandDone); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type QueueInfoResponse struct {
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

func (s *API) QueueInfo(w http.ResponseWriter, r *http.Request) {
	info, err := s.store.Info(r.Context(), chi.URLParam(r, "queue"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, QueueInfoResponse{
		Queue:            info.Queue,
		Waiting:          info.Waiting,
		Entered:          info.Entered,
		Active:           info.Entered,
		MaxActive:        info.Settings.MaxActive,
		Paused:           info.Paused,
		OpensAt:          httpkit.RFC3339(info.OpensAt),
		PrequeueFrom:     httpkit.RFC3339(info.PrequeueFrom),
		RefillSize:       info.Settings.RefillSize,
		RefillIntervalMS: info.Settings.RefillInterval.Milliseconds(),
	})
}
