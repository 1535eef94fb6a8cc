package httpapi

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/origin"
	"github.com/waitroom/waitroom/internal/place"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/scheduler"
)

// ticketResponse is the answer of enter and status.
type ticketResponse struct {
	Queue       string       `json:"queue"`
	UserID      string       `json:"user_id"` // the member id holding the place
	Status      queue.Status `json:"status"`
	Reason      string       `json:"reason,omitempty"` // NOT_WAITING: why the place ended, when known
	Position    int64        `json:"position"`
	Waiting     int64        `json:"waiting"`
	ETASeconds  int64        `json:"eta_seconds"`
	PollAfterMS int64        `json:"poll_after_ms"`
	Paused      bool         `json:"paused,omitempty"`      // the operator holds admissions; the place is kept
	OpensAt     string       `json:"opens_at,omitempty"`    // WAITING in a scheduled opening's draw: when it is drawn
	PlaceToken  string       `json:"place_token,omitempty"` // enter only: the place credential
	Pass        string       `json:"pass,omitempty"`        // ENTERED only: the entry pass
	TargetURL   string       `json:"target_url,omitempty"`
}

// enterRequest is the enter body: empty (or {}) for a browser or app
// that proves no identity, a site's join token, or, in insecure mode
// only, a plain user id; and a solved proof-of-work challenge when the
// queue asks for one.
type enterRequest struct {
	UserID    *string `json:"user_id"`
	JoinToken string  `json:"join_token"`
	Challenge string  `json:"challenge"`
	Nonce     string  `json:"nonce"`
}

func (s *Server) enter(w http.ResponseWriter, r *http.Request) {
	// Other sites' pages cannot plant places with their visitors'
	// browsers (package origin).
	if !s.origins.SameSite(r) {
		s.fail(w, r, errCrossSite)
		return
	}
	if !origin.JSONBody(r) {
		s.fail(w, r, errNotJSON)
		return
	}
	req, err := decodeEnter(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := chi.URLParam(r, "queue")
	if !s.store.Has(q) {
		s.fail(w, r, queue.ErrUnknownQueue)
		return
	}
	// A proof of work is checked here (an HMAC and one hash); the store
	// makes it single-use and compares it with the queue's difficulty.
	caller := queue.Caller{Client: s.clientIP.Addr(r).String()}
	if req.Challenge != "" {
		if caller.Proof, err = s.challenges.Check(q, req.Challenge, req.Nonce); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	var member, token, replaced string
	enter := s.store.EnterAs
	switch {
	case req.UserID != nil && req.JoinToken != "":
		s.fail(w, r, errTwoIdentities)
		return
	case req.UserID != nil:
		if !s.insecureIDs {
			s.fail(w, r, errUserIDsDisabled)
			return
		}
		member = *req.UserID
		caller.Proved = true
	case req.JoinToken != "":
		if member, err = s.join.Member(q, req.JoinToken); err != nil {
			s.fail(w, r, err)
			return
		}
		// The account may already hold a place from another device.
		enter = s.store.Join
		caller.Proved = true
		// An anonymous place this browser held is given up for it, once
		// the join is through (a refused one changes nothing); else it
		// would wait on, unclaimed, and take an admission later.
		if old, err := s.placeOf(r, q); err == nil && old != member {
			replaced = old
		}
	default:
		// Re-entering with a credential keeps the member id (and goes to
		// the back, as any re-entry does); otherwise this is a new place.
		if member, err = s.placeOf(r, q); err != nil {
			if _, sent := gate.BearerToken(r); sent {
				s.fail(w, r, err) // an app that claims a place must prove it
				return
			}
			member = place.NewMember() // no cookie, or a stale one
		} else {
			caller.Proved = true
		}
	}
	caller.User = member
	if req.UserID == nil {
		token = s.places.Issue(q, member)
		// Set before the store is asked: even a 503 (outcome unknown)
		// leaves the browser able to ask for the place it may have got.
		s.setPlaceCookie(w, q, token)
	}
	t, err := enter(r.Context(), q, caller)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if replaced != "" {
		// The answer then counts the place given up out of the line.
		if err := s.store.Leave(r.Context(), q, replaced); err != nil {
			s.fail(w, r, err)
			return
		}
		if t, err = s.store.Status(r.Context(), q, member); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	if t.Status == queue.NotOpen {
		s.fail(w, r, notOpen(t))
		return
	}
	s.writeTicket(w, r, q, member, token, t)
}

// notOpen is the answer to an enter before a scheduled opening's
// pre-queue window: when the window opens, and when the line does.
func notOpen(t queue.Ticket) *apiError {
	return &apiError{status: http.StatusForbidden, code: "not_open",
		message:      "the line is not open yet; come back at prequeue_from",
		opensAt:      rfc3339(t.OpensAt),
		prequeueFrom: rfc3339(t.PrequeueFrom)}
}

// rfc3339 formats t for the API, "" for the zero time.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	q := chi.URLParam(r, "queue")
	if !s.store.Has(q) {
		s.fail(w, r, queue.ErrUnknownQueue)
		return
	}
	member, err := s.memberOf(r, q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := s.store.StatusAs(r.Context(), q, queue.Caller{User: member, Client: s.clientIP.Addr(r).String(), Proved: true})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeTicket(w, r, q, member, "", t)
}

// leavePlace gives up the place the caller proves, and forgets the cookie.
func (s *Server) leavePlace(w http.ResponseWriter, r *http.Request) {
	if !s.origins.SameSite(r) {
		s.fail(w, r, errCrossSite)
		return
	}
	q := chi.URLParam(r, "queue")
	if !s.store.Has(q) {
		s.fail(w, r, queue.ErrUnknownQueue)
		return
	}
	member, err := s.placeOf(r, q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.store.Leave(r.Context(), q, member); err != nil {
		s.fail(w, r, err)
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

// removeUser is the operator taking the user named in the path out of
// the line, or ending their admission; where the user stood goes to the
// audit log.
func (s *Server) removeUser(w http.ResponseWriter, r *http.Request) {
	s.leaveNamed(w, r, func(ctx context.Context, q, user string) error {
		before, err := s.store.Status(ctx, q, user)
		if err != nil {
			return err
		}
		if err := s.store.Remove(ctx, q, user); err != nil {
			return err
		}
		s.recordRemoval(r, q, user, before)
		return nil
	})
}

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

// adminQueueResponse is one queue as the back office sees it.
type adminQueueResponse struct {
	Queue      string `json:"queue"`
	Waiting    int64  `json:"waiting"`
	Entered    int64  `json:"entered"`
	Active     int64  `json:"active"` // the same count as entered
	MaxActive  int    `json:"max_active"`
	MaxWaiting int    `json:"max_waiting"` // the line's cap (0: none)
	// The proof of work asked before entering, in leading zero bits (0: none).
	ChallengeDifficulty int    `json:"challenge_difficulty"`
	Paused              bool   `json:"paused"`
	AbandonAfterMS      int64  `json:"abandon_after_ms"`
	AbandonedLast       int64  `json:"abandoned_last_interval"`
	OpensAt             string `json:"opens_at,omitempty"`      // a scheduled opening, RFC 3339
	PrequeueFrom        string `json:"prequeue_from,omitempty"` // its pre-queue window's start
	// The last opening's draw, once made: its seed and participants, with
	// which anyone can recompute the order (README, "Scheduled opening").
	DrawFor            string `json:"draw_for,omitempty"`
	DrawSeed           int64  `json:"draw_seed,omitempty"`
	DrawCount          int64  `json:"draw_count,omitempty"`
	Tokens             int64  `json:"tokens"`
	RefillSize         int    `json:"refill_size"`
	RefillIntervalMS   int64  `json:"refill_interval_ms"`
	SessionTTLMS       int64  `json:"session_ttl_ms"`
	SessionMaxMS       int64  `json:"session_max_ms,omitempty"` // sliding sessions' limit (WAITROOM_SESSION_MAX), when on
	LastTickAtMS       int64  `json:"last_tick_at_ms"`
	AdmittedLastMinute int64  `json:"admitted_last_minute"`
}

func (s *Server) adminQueues(w http.ResponseWriter, r *http.Request) {
	var resp struct {
		Queues []adminQueueResponse `json:"queues"`
	}
	for _, q := range s.store.Queues() {
		aq, err := s.adminQueueInfo(r.Context(), q)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		resp.Queues = append(resp.Queues, aq)
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) adminQueue(w http.ResponseWriter, r *http.Request) {
	aq, err := s.adminQueueInfo(r.Context(), chi.URLParam(r, "queue"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, aq)
}

type refillSizeRequest struct {
	RefillSize *int `json:"refill_size"`
}

func (s *Server) setRefillSize(w http.ResponseWriter, r *http.Request) {
	req, err := decode[refillSizeRequest](w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if req.RefillSize == nil {
		s.fail(w, r, queue.ErrInvalidRefill)
		return
	}
	q := chi.URLParam(r, "queue")
	// The view before, for the audit log's old value.
	before, err := s.adminQueueInfo(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.store.SetRefillSize(r.Context(), q, *req.RefillSize); err != nil {
		s.fail(w, r, err)
		return
	}
	logger(r, s.log).Info("refill size changed", "queue", q, "refill_size", *req.RefillSize)
	requested := requestedRefill(*req.RefillSize)
	aq, err := s.adminQueueInfo(r.Context(), q)
	if err != nil {
		s.record(r, q, "refill_size", "", settingChanges(requested, before, nil))
		s.fail(w, r, err)
		return
	}
	s.record(r, q, "refill_size", "", settingChanges(requested, before, &aq))
	writeJSON(w, http.StatusOK, aq)
}

type historyPoint struct {
	AtMS      int64 `json:"at_ms"`
	Admitted  int64 `json:"admitted"`
	Waiting   int64 `json:"waiting"`
	Abandoned int64 `json:"abandoned"`
}

func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	q := chi.URLParam(r, "queue")
	info, err := s.store.Info(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	points, err := s.store.History(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := struct {
		Queue            string         `json:"queue"`
		RefillIntervalMS int64          `json:"refill_interval_ms"`
		Points           []historyPoint `json:"points"`
	}{Queue: q, RefillIntervalMS: info.Settings.RefillInterval.Milliseconds(), Points: make([]historyPoint, len(points))}
	for i, p := range points {
		resp.Points[i] = historyPoint{p.At.UnixMilli(), p.Admitted, p.Waiting, p.Abandoned}
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) adminQueueInfo(ctx context.Context, q string) (adminQueueResponse, error) {
	info, err := s.store.Info(ctx, q)
	if err != nil {
		return adminQueueResponse{}, err
	}
	points, err := s.store.History(ctx, q)
	if err != nil {
		return adminQueueResponse{}, err
	}
	aq := adminQueueResponse{
		Queue:               q,
		Waiting:             info.Waiting,
		Entered:             info.Entered,
		Active:              info.Entered,
		MaxActive:           info.Settings.MaxActive,
		MaxWaiting:          info.Settings.MaxWaiting,
		Paused:              info.Paused,
		AbandonAfterMS:      info.Settings.AbandonAfter.Milliseconds(),
		ChallengeDifficulty: info.Settings.ChallengeDifficulty,
		AbandonedLast:       info.AbandonedLastInterval,
		OpensAt:             rfc3339(info.OpensAt),
		PrequeueFrom:        rfc3339(info.PrequeueFrom),
		DrawFor:             rfc3339(info.DrawFor),
		DrawSeed:            info.DrawSeed,
		DrawCount:           info.DrawCount,
		Tokens:              info.Tokens,
		RefillSize:          info.Settings.RefillSize,
		RefillIntervalMS:    info.Settings.RefillInterval.Milliseconds(),
		SessionTTLMS:        info.Settings.SessionTTL.Milliseconds(),
		SessionMaxMS:        info.Settings.SessionMax.Milliseconds(),
	}
	if !info.LastTickAt.IsZero() {
		aq.LastTickAtMS = info.LastTickAt.UnixMilli()
	}
	// The interval in progress, and those that ended within the last
	// minute of the Redis clock. An interval ends where the next begins;
	// the last one at the last tick.
	aq.AdmittedLastMinute = info.AdmittedThisInterval
	since := info.Now.Add(-time.Minute)
	for i, p := range points {
		end := info.LastTickAt
		if i+1 < len(points) {
			end = points[i+1].At
		}
		if end.After(since) {
			aq.AdmittedLastMinute += p.Admitted
		}
	}
	return aq, nil
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.store.Ping(r.Context()); err != nil {
		s.fail(w, r, errUnavailable)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// Pages.

func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/q/"+url.PathEscape(s.store.Queues()[0]), http.StatusFound)
}

func (s *Server) waitingPage(w http.ResponseWriter, r *http.Request) {
	if !s.store.Has(chi.URLParam(r, "queue")) {
		if wantsHTML(r) {
			// A person followed a wrong link: a page, not raw JSON.
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(unknownQueuePage))
			return
		}
		s.fail(w, r, queue.ErrUnknownQueue)
		return
	}
	// The page sends an admitted user to ?return=: only ever a path on
	// this site (the page checks too).
	if ret, has := r.URL.Query()["return"]; has && (len(ret) != 1 || !gate.SameSitePath(ret[0])) {
		s.fail(w, r, errInvalidReturn)
		return
	}
	s.page(w, r, "waiting.html")
}

// unknownQueuePage answers /q/{queue} for a queue that does not exist.
const unknownQueuePage = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>No such waiting line</title>
<link rel="stylesheet" href="/_waitroom/static/style.css"></head>
<body class="page-waiting"><main class="card"><h1>No such waiting line</h1>
<p>This waiting line does not exist. Please check the address, or go back to the site that sent you here.</p>
<p lang="ko">존재하지 않는 대기열입니다. 주소를 확인하거나, 이 페이지로 보낸 사이트로 돌아가 주세요.</p>
</main></body></html>`

// wantsHTML reports whether the client asked for a page (a browser).
func wantsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

func (s *Server) favicon(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=86400")
	http.ServeFileFS(w, r, s.static, "favicon.ico")
}

func (s *Server) adminPage(w http.ResponseWriter, r *http.Request) {
	s.page(w, r, "admin.html")
}

func (s *Server) page(w http.ResponseWriter, r *http.Request, name string) {
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, s.static, name)
}

// writeTicket answers enter and status: the ticket, the place token when
// one was issued, and for an admitted user a freshly signed entry pass.
func (s *Server) writeTicket(w http.ResponseWriter, r *http.Request, q, member, placeToken string, t queue.Ticket) {
	resp := ticketResponse{
		Queue:       q,
		UserID:      member,
		Status:      t.Status,
		Reason:      t.Reason,
		Position:    t.Position,
		Waiting:     t.Waiting,
		ETASeconds:  int64((t.ETA + time.Second - 1) / time.Second),
		PollAfterMS: pollAfter(t).Milliseconds(),
		Paused:      t.Paused,
		PlaceToken:  placeToken,
	}
	if t.Status == queue.Waiting && t.Position == 0 {
		resp.OpensAt = rfc3339(t.OpensAt)
	}
	if t.Status == queue.Entered {
		p, err := s.passes.Issue(q, member, t.AdmittedAt, t.AdmissionEnds())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		resp.Pass = p
		if s.targetURL != "" {
			resp.TargetURL = targetURL(s.targetURL, p)
		}
	}
	writeTicketJSON(w, resp)
}

// maxPoll caps the suggested polling interval. The load of a line is
// about its length over the typical interval: a million waiting at 30 s
// would ask 33,000 times a second, more than one small box serves (about
// 24,000 status calls a second, docs/PERFORMANCE.md); at 60 s, 17,000.
const maxPoll = 60 * time.Second

// pollAfter suggests when a waiting user should ask again. Anyone the next
// ten ticks may admit asks just after each tick (the scheduler applies it
// within one check period), so they learn of their turn within an
// interval. Further back a place moves little per tick, so the user skips
// a tenth of the intervals ahead (ETA/10), up to maxPoll: nobody learns of
// the turn noticeably late, as the wait shrinks faster than the polls
// space out. The skipped part is shortened by up to a fifth at random, so
// a crowd that arrived together does not ask together. Never later than
// half the abandonment window, so a page that does as it is told is never
// taken for one that was closed.
func pollAfter(t queue.Ticket) time.Duration {
	if t.Status != queue.Waiting {
		return 0
	}
	next := t.UntilNextTick + scheduler.Period(t.RefillInterval) + 100*time.Millisecond
	d := next
	if skip := t.TicksAhead / 10; skip > 0 {
		extra := min(time.Duration(skip)*t.RefillInterval, maxPoll)
		extra -= time.Duration(rand.Int64N(int64(extra)/5 + 1))
		d += extra
	}
	d = min(d, maxPoll)
	if t.AbandonAfter > 0 {
		d = min(d, t.AbandonAfter/2)
	}
	return d
}

// targetURL is the order page's address with the entry pass added as
// wr_pass. No user id: the pass is the only thing that opens the page.
func targetURL(base, pass string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base // validated at start-up; cannot happen
	}
	v := u.Query()
	v.Set("wr_pass", pass)
	u.RawQuery = v.Encode()
	return u.String()
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
