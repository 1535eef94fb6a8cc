package client

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Status is where a place stands.
type Status string

const (
	Waiting    Status = "WAITING"     // in line: poll again after PollAfter
	Entered    Status = "ENTERED"     // admitted: the ticket carries the pass
	NotWaiting Status = "NOT_WAITING" // the place ended (Reason): enter again for a new one
)

// Place is what an app keeps to hold its place across restarts: save it
// (it marshals to JSON) whenever Options.OnPlace reports it, and give it
// back as Options.Place. Token is a secret (it is the place): keep it
// where the app keeps its other credentials, never in logs.
type Place struct {
	Queue string `json:"queue"`
	// Token is the place credential (the API's place_token).
	Token string `json:"token"`
	// Member is the member id holding the place, when known.
	Member string `json:"member,omitempty"`
}

// Ticket is an answer of enter or status: where the place stands.
type Ticket struct {
	Queue  string
	Member string // the member id holding the place
	Status Status
	// Reason says why a place ended (NOT_WAITING), when known.
	Reason string
	// Position is 1-based (people ahead: Position-1), 0 unless WAITING.
	Position int64
	// Estimated: Position and the ETA come from the service's snapshot of
	// a line the place is far back in; show them as "about".
	Estimated bool
	Lane      string // "" for the general line
	Waiting   int64  // people in the place's line
	// ETA and the range ETALow–ETAHigh it likely falls in; all 0 while
	// Paused (nobody is admitted until an operator resumes).
	ETA, ETALow, ETAHigh time.Duration
	Paused               bool
	// PollAfter is when the service asks to be asked again (Wait
	// follows it).
	PollAfter time.Duration
	// OpensAt: waiting in a scheduled opening's draw, when it is drawn.
	OpensAt time.Time
	// Pass is the entry pass, ENTERED only: send it to the order page
	// (Authorization: Bearer) and end the admission with Client.Done.
	Pass string
	// PassExpires is the pass's exp, read without checking its signature
	// (the order page checks it): when the app should stop offering it.
	PassExpires time.Time
	// TargetURL (the order page with the pass) or NextPath (the room's
	// page on the service's host), when the service names one.
	TargetURL, NextPath string
}

// wireTicket is the JSON of a ticket (publicapi.TicketResponse).
type wireTicket struct {
	Queue          string `json:"queue"`
	UserID         string `json:"user_id"`
	Status         Status `json:"status"`
	Reason         string `json:"reason"`
	Position       int64  `json:"position"`
	Estimated      bool   `json:"position_estimated"`
	Lane           string `json:"lane"`
	Waiting        int64  `json:"waiting"`
	ETASeconds     *int64 `json:"eta_seconds"`
	ETALowSeconds  *int64 `json:"eta_low_seconds"`
	ETAHighSeconds *int64 `json:"eta_high_seconds"`
	PollAfterMS    int64  `json:"poll_after_ms"`
	Paused         bool   `json:"paused"`
	OpensAt        string `json:"opens_at"`
	PlaceToken     string `json:"place_token"`
	Pass           string `json:"pass"`
	TargetURL      string `json:"target_url"`
	NextPath       string `json:"next_path"`
}

// maxSeconds bounds the durations read from a ticket (a year): a broken
// answer cannot overflow time.Duration.
const maxSeconds = 365 * 24 * 3600

// ticket is w as a Ticket, or ErrBadAnswer for an answer no service
// gives: an unknown status, an admission without a pass.
func (w *wireTicket) ticket(queue string) (Ticket, error) {
	t := Ticket{
		Queue: w.Queue, Member: w.UserID, Status: w.Status, Reason: w.Reason,
		Position: w.Position, Estimated: w.Estimated, Lane: w.Lane, Waiting: w.Waiting,
		Paused: w.Paused, Pass: w.Pass, TargetURL: w.TargetURL, NextPath: w.NextPath,
	}
	switch w.Status {
	case Waiting, NotWaiting:
	case Entered:
		if w.Pass == "" {
			return Ticket{}, fmt.Errorf("%w: admitted without a pass", ErrBadAnswer)
		}
		t.PassExpires = passExpiry(w.Pass)
	default:
		return Ticket{}, fmt.Errorf("%w: status %.40q", ErrBadAnswer, w.Status)
	}
	if w.Queue != "" && w.Queue != queue {
		return Ticket{}, fmt.Errorf("%w: a ticket of queue %.40q, not %q", ErrBadAnswer, w.Queue, queue)
	}
	t.Queue = queue
	sec := func(p *int64) time.Duration {
		if p == nil {
			return 0
		}
		return time.Duration(min(max(*p, 0), maxSeconds)) * time.Second
	}
	t.ETA, t.ETALow, t.ETAHigh = sec(w.ETASeconds), sec(w.ETALowSeconds), sec(w.ETAHighSeconds)
	t.PollAfter = time.Duration(min(max(w.PollAfterMS, 0), maxSeconds*1000)) * time.Millisecond
	if w.OpensAt != "" {
		t.OpensAt, _ = time.Parse(time.RFC3339, w.OpensAt)
	}
	return t, nil
}

// passExpiry reads a pass's exp without checking it; zero when it has
// none readable.
func passExpiry(pass string) time.Time {
	parts := strings.Split(pass, ".")
	if len(parts) != 3 || len(parts[1]) > 4096 {
		return time.Time{}
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}
	}
	var c struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(b, &c) != nil || c.Exp <= 0 || c.Exp > 1<<40 {
		return time.Time{}
	}
	return time.Unix(c.Exp, 0)
}

// Handoff is a one-time hand-over of the place to another device: show
// Code (to type) or a link to Path on the service (a QR code), and let
// the other device enter with EnterOptions.Handoff. It works once, until
// ExpiresAt (two minutes); then this device's credential is spent
// (ErrPlaceMoved).
type Handoff struct {
	Token     string    // for links: the service's /q/{queue}?handoff={token}
	Code      string    // "ABCD-EFGH": for typing
	ExpiresAt time.Time //
	Path      string    // the waiting page that takes the place over, on the service's host
}

// wireHandoff is the JSON of a new hand-over.
type wireHandoff struct {
	Token     string `json:"token"`
	Code      string `json:"code"`
	ExpiresAt string `json:"expires_at"`
	Path      string `json:"path"`
}

// wireChallenge is the JSON of a proof-of-work challenge.
type wireChallenge struct {
	Challenge  string `json:"challenge"`
	Difficulty int    `json:"difficulty"`
	ExpiresAt  string `json:"expires_at"`
}
