package publicapi

import (
	"encoding/hex"
	"net/http"
	"net/url"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/web/httpkit"
	"github.com/waitroom/waitroom/internal/web/i18n"
)

// closing is queue q's closing, from this replica's cached text.
func (s *API) closing(r *http.Request, q string) (queue.Closing, error) {
	t, err := s.store.PageText(r.Context(), q)
	return t.Closed, err
}

// TicketResponse is the answer of enter and status.
type TicketResponse struct {
	Queue    string       `json:"queue"`
	UserID   string       `json:"user_id"` // the member id holding the place
	Status   queue.Status `json:"status"`
	Reason   string       `json:"reason,omitempty"` // NOT_WAITING: why the place ended, when known
	Position int64        `json:"position"`
	// Estimated: position and ETA come from the replica's snapshot of a
	// line the place is far back in (queue.Ticket.Estimated): "about".
	Estimated bool `json:"position_estimated,omitempty"`
	// Arrival is a waiting place's arrival number (its order in the
	// line, signed into its credential): with the line's public document
	// (GET .../line) a page far from the head works out its own position.
	Arrival int64 `json:"arrival,omitempty"`
	// Lane is the lane the place is in; absent: the general
	// lane. Position, waiting and the ETA count the lane's own line.
	Lane    string `json:"lane,omitempty"`
	Waiting int64  `json:"waiting"`
	// The wait, and as a range (queue.Ticket.ETALow, ETAHigh): likely no
	// sooner than the low end, due no later than the high end; the page
	// shows it ("about 12–15 min"). All three are null while the queue is
	// paused: nobody is admitted until an operator resumes, so no time can
	// be promised.
	ETASeconds     *int64 `json:"eta_seconds"`
	ETALowSeconds  *int64 `json:"eta_low_seconds"`
	ETAHighSeconds *int64 `json:"eta_high_seconds"`
	PollAfterMS    int64  `json:"poll_after_ms"`
	Paused         bool   `json:"paused,omitempty"`   // the operator holds admissions; the place is kept
	OpensAt        string `json:"opens_at,omitempty"` // WAITING in a scheduled opening's draw: when it is drawn
	// DrawCommitment: WAITING in a draw, the SHA-256 (hex) of its sealed
	// seed, published before anyone's place is known; the seed is
	// revealed at the opening (GET .../draw), and must hash to it.
	// With DrawKey and DrawPlace (a place the draw placed): the draw it
	// came from, the member's draw key, HMAC-SHA256(seed, user_id) (hex),
	// and its place in the draw (in its lane's line); docs/DRAW.md.
	DrawCommitment string `json:"draw_commitment,omitempty"`
	DrawKey        string `json:"draw_key,omitempty"`
	DrawPlace      int64  `json:"draw_place,omitempty"`
	// Message and ReopensAt: CLOSED, the operator's message in the
	// caller's language (?lang=, the wr_lang cookie, Accept-Language;
	// else English, else any) and when sales reopen, if said.
	Message   string `json:"message,omitempty"`
	ReopensAt string `json:"reopens_at,omitempty"`
	// PlaceToken: the place credential, on enter, and on a status whose
	// caller's credential names an older arrival number of the member
	// (it entered again): the one for the place it holds now.
	PlaceToken string `json:"place_token,omitempty"`
	Pass       string `json:"pass,omitempty"` // ENTERED only: the entry pass
	TargetURL  string `json:"target_url,omitempty"`
	// NextPath: ENTERED without a target URL, in gate mode, the page of
	// the queue's room on this site to continue to (the page adds the
	// pass).
	NextPath string `json:"next_path,omitempty"`
}

// writeTicket answers enter and Status: the ticket, when to poll next
// (enter: t.FirstPollAfter, Status: t.PollAfter), the place token when
// one was issued, and for an admitted user a freshly signed entry pass.
func (s *API) writeTicket(w http.ResponseWriter, r *http.Request, q, member, placeToken string, t queue.Ticket, poll time.Duration) {
	resp := TicketResponse{
		Queue:       q,
		UserID:      member,
		Status:      t.Status,
		Reason:      t.Reason,
		Position:    t.Position,
		Estimated:   t.Estimated,
		Arrival:     arrivalOf(t),
		Lane:        queue.LaneOf(member),
		Waiting:     t.Waiting,
		PollAfterMS: poll.Milliseconds(),
		Paused:      t.Paused,
		PlaceToken:  placeToken,
	}
	if !t.Paused {
		resp.ETASeconds = seconds((t.ETA + time.Second - 1) / time.Second)
		// The low end rounded down, the high end up: the range only widens.
		resp.ETALowSeconds = seconds(t.ETALow / time.Second)
		resp.ETAHighSeconds = seconds((t.ETAHigh + time.Second - 1) / time.Second)
	}

	if t.Status == queue.Waiting && t.Position == 0 {
		resp.OpensAt = httpkit.RFC3339(t.OpensAt)
	}
	if t.Status == queue.Waiting && (t.Position == 0 || t.DrawPlace > 0) {
		// Read only then, from this replica's cache (PageDraw): a queue
		// with no draw pays nothing for it.
		if err := s.drawFields(r, q, member, t, &resp); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	if t.Status == queue.Closed {
		// Read only once closed, and from this replica's cache
		// (PageText): a queue never closed pays nothing for it.
		c, err := s.closing(r, q)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		resp.Message, resp.ReopensAt = c.In(i18n.FromRequest(r)), httpkit.RFC3339(c.ReopensAt)
		resp.ETASeconds, resp.ETALowSeconds, resp.ETAHighSeconds = nil, nil, nil
	}
	if t.Status == queue.Entered {
		p, err := s.passes.Issue(q, member, t.AdmittedAt, t.AdmissionEnds())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		resp.Pass = p
		switch {
		case s.targetURL != "":
			resp.TargetURL = targetURL(s.targetURL, p)
		case s.proxying:
			// Someone who came to the waiting page directly, not sent by
			// the gate with a return path: the room's front page on this
			// host (the whole site's: "/"), through the gate, rather than
			// a bare pass.
			resp.NextPath, _ = s.gate.Entrance(r.Host, q)
		}
	}
	writeTicketJSON(w, resp)
}

// seconds is n (a count of seconds) as an answer's field.
func seconds(n time.Duration) *int64 {
	v := int64(n)
	return &v
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

// arrivalOf is a waiting place's arrival number, 0 for anyone else (in a
// draw the order is not yet drawn).
func arrivalOf(t queue.Ticket) int64 {
	if t.Status != queue.Waiting || t.Position == 0 {
		return 0
	}
	return t.Seq
}

// drawFields adds to resp what a place in a draw is told (t: its ticket):
// in the pre-queue, the sealed draw's commitment; placed by the last
// draw, that draw's commitment, the member's draw key and its place. A
// place an older draw placed (no seed, or a place beyond the draw's
// count) is told nothing of it.
func (s *API) drawFields(r *http.Request, q, member string, t queue.Ticket, resp *TicketResponse) error {
	d, err := s.store.PageDraw(r.Context(), q)
	if err != nil {
		return err
	}
	if t.Position == 0 {
		resp.DrawCommitment = d.Sealed
		return nil
	}
	last := d.Last
	seed := drawSeedOf(last)
	if seed == nil || !drawnIn(last, queue.LaneOf(member), t.DrawPlace) {
		return nil
	}
	resp.DrawCommitment, resp.DrawKey, resp.DrawPlace = last.Commitment, hex.EncodeToString(queue.DrawKey(seed, member)), t.DrawPlace
	return nil
}

// drawnIn reports whether place is one of lane's line's places in draw d.
func drawnIn(d queue.DrawRecord, lane string, place int64) bool {
	for _, l := range d.Lines {
		if l.Lane == lane {
			return place >= 1 && place <= l.Count
		}
	}
	return false
}
