package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/crossorigin"
	"github.com/waitroom/waitroom/internal/humancheck"
	"github.com/waitroom/waitroom/internal/paid"
	"github.com/waitroom/waitroom/internal/place"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/reqcheck"
)

// The public queue API: enter, status, leave, done and a queue's info.
// Each handler decodes, asks the store once, and answers (ticket.go
// writes the tickets).

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
	if req.Handoff != "" {
		s.enterHandoff(w, r, q, req)
		return
	}
	e, credential, err := s.entry(r, q, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := s.store.EnterWith(r.Context(), q, e)
	s.notePaid(q, e, t, err)
	if err != nil {
		if credential && !errors.Is(err, queue.ErrMoved) && !errors.Is(err, queue.ErrPlaceInOtherLine) {
			// Even a 503 (outcome unknown) leaves the browser able to ask
			// for the place it may have got; without its arrival number,
			// its status then asks Redis.
			s.setPlaceCookie(w, q, s.places.IssueGen(q, e.User, 0, e.Gen))
		}
		s.failPlace(w, r, q, err)
		return
	}
	token := ""
	if credential {
		token = s.places.IssueGen(q, e.User, t.Seq, e.Gen)
		s.setPlaceCookie(w, q, token)
	}
	if t.Status == queue.NotOpen {
		s.fail(w, r, notOpen(t))
		return
	}
	s.writeTicket(w, r, q, e.User, token, t, t.FirstPollAfter())
}

// entry is the enter req asks for in queue q, from what the request
// proves, and whether to hand out a place credential with it (not for a
// plain id). Whoever enters is a plain user id (insecure mode), a site's join
// token's member, the member of a place credential (entering again), or
// a new anonymous member. A proof of work is checked here (an HMAC and
// one hash); the store makes it single-use and compares it with the
// queue's difficulty.
func (s *Server) entry(r *http.Request, q string, req enterRequest) (queue.Entry, bool, error) {
	e := queue.Entry{Caller: s.client(r)}
	if req.HumanToken != "" && s.human != nil {
		// Checked before the store: the provider's answer is what the
		// store's price reads (Caller.Human). A provider that cannot answer
		// makes this enter pay proof of work at the ceiling instead.
		switch err := s.human.Verify(r.Context(), req.HumanToken, s.clientIP.Addr(r).String()); {
		case err == nil:
			e.Human = true
			s.paid.Record(q, paid.Human(paid.HumanPassed))
		case errors.Is(err, humancheck.ErrFailed):
			s.paid.Record(q, paid.Human(paid.HumanFailed))
			return queue.Entry{}, false, err
		default:
			s.paid.Record(q, paid.Human(paid.HumanUnavailable))
		}
	}
	if req.Challenge != "" {
		p, err := s.challenges.Check(q, req.Challenge, req.Nonce)
		if err != nil {
			return queue.Entry{}, false, err
		}
		e.Proof = p
	}
	switch {
	case req.UserID != nil && req.JoinToken != "":
		return queue.Entry{}, false, errTwoIdentities
	case req.UserID != nil:
		if !s.insecureIDs {
			return queue.Entry{}, false, errUserIDsDisabled
		}
		e.User, e.Proved = *req.UserID, true
		return e, false, nil
	case req.JoinToken != "":
		member, err := s.join.Member(q, req.JoinToken)
		if err != nil {
			return queue.Entry{}, false, err
		}
		// The account may already hold a place from another device; an
		// anonymous place this browser held is given up for it. An account
		// is one person, whatever network it comes from: it pays no
		// network's price.
		e.User, e.Proved, e.Join = member, true, true
		e.Pricing = queue.PriceNone
		if old, err := s.placeOf(r, q); err == nil {
			e.Replaces = old.Member
		}
	default:
		// Re-entering with a credential keeps the member id (and goes to
		// the back, as any re-entry does); otherwise this is a new place.
		p, err := s.placeOf(r, q)
		if err != nil {
			if _, sent := reqcheck.BearerToken(r); sent {
				return queue.Entry{}, false, err // an app that claims a place must prove it
			}
			p = place.Place{Member: place.NewMember()} // no cookie, or a stale one
		} else {
			e.Proved, e.Credential, e.Gen = true, true, p.Gen
		}
		e.User = p.Member
	}
	return e, true, nil
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
	t, err := s.store.StatusAs(r.Context(), q, c)
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
	if err := s.store.LeaveAs(r.Context(), q, p.Member, p.Gen); err != nil {
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
	s.leaveNamed(w, r, s.store.Leave)
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

// notePaid records what an enter cost its caller (the back office's and
// the metrics' "what people paid"): a place made and the proof of work it
// carried, or a human check asked.
func (s *Server) notePaid(q string, e queue.Entry, t queue.Ticket, err error) {
	switch {
	case errors.Is(err, queue.ErrHumanCheckRequired):
		s.paid.Record(q, paid.Human(paid.HumanAsked))
	case err == nil && (t.Status == queue.Waiting || t.Status == queue.Entered):
		s.paid.Record(q, paid.Placed(e.Proof.Difficulty))
	}
}
