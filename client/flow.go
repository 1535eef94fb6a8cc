package client

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// EnterOptions say who enters, beyond the place the client holds.
type EnterOptions struct {
	// JoinToken is a site's join token for its signed-in user (the
	// member id becomes the account's: entering again keeps its place).
	JoinToken string
	// Handoff takes over a place another device handed over: the token
	// of its link or the code typed (Client.Handoff on that device).
	Handoff string
	// HumanToken is the human check's answer, after an enter refused
	// with ErrHumanCheckRequired: the token the provider's widget gave.
	HumanToken string
}

// enterBody is enter's JSON body.
type enterBody struct {
	JoinToken  string `json:"join_token,omitempty"`
	Handoff    string `json:"handoff,omitempty"`
	HumanToken string `json:"human_token,omitempty"`
	Challenge  string `json:"challenge,omitempty"`
	Nonce      string `json:"nonce,omitempty"`
}

// Enter takes a place in line, or is admitted at once (the ticket says
// which), and keeps the place's credential. When the queue asks for
// proof of work it gets a challenge, pays it (Options.MaxDifficulty) and
// enters with the solution; a human check comes back as
// ErrHumanCheckRequired, whose *Error names the widget to show.
//
// Enter with a place held (not with Handoff) is entering again: the same
// member, at the back of the line. An app that restarts with its saved
// place calls Wait, not Enter; Enter again after ErrPlaceEnded.
//
// A busy service (503, 429) is asked again after its Retry-After. An
// enter answered 503 may still have made a place, and sets its
// credential all the same: the client keeps it, so the next send
// enters again as that member instead of making a second one.
func (c *Client) Enter(ctx context.Context, o EnterOptions) (Ticket, error) {
	body := enterBody{JoinToken: o.JoinToken, Handoff: o.Handoff, HumanToken: o.HumanToken}
	for solves := 0; ; solves++ {
		t, err := c.enterOnce(ctx, body)
		if !errors.Is(err, ErrChallengeRequired) || solves == maxSolves {
			return t, err
		}
		ch, d, err := c.challenge(ctx)
		if err != nil {
			return Ticket{}, err
		}
		nonce, err := solve(ctx, ch, d)
		if err != nil {
			return Ticket{}, err
		}
		body.Challenge, body.Nonce = ch, nonce
	}
}

// enterOnce is one enter (sent again while the service is busy).
func (c *Client) enterOnce(ctx context.Context, body enterBody) (Ticket, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return Ticket{}, err
	}
	// A hand-over makes the place this device's: the credential it may
	// hold for another place is not the one to prove.
	r := request{method: http.MethodPost, path: "/enter", body: b, credential: body.Handoff == ""}
	held, _ := c.Place()
	var w wireTicket
	_, err = c.call(ctx, r, &w, c.adoptCookie)
	if r.credential && held.Token != "" && spent(err) {
		c.forget(held)
	}
	if err != nil {
		return Ticket{}, err
	}
	if w.PlaceToken == "" {
		return Ticket{}, fmt.Errorf("%w: enter gave no place_token", ErrBadAnswer)
	}
	return c.took(&w)
}

// adoptCookie keeps the place credential a failed enter's answer sets
// as a cookie (503, 429): the place may exist, and entering again with
// its credential keeps its member instead of making another.
func (c *Client) adoptCookie(h http.Header) {
	for _, line := range h.Values("Set-Cookie") {
		ck, err := http.ParseSetCookie(line)
		if err != nil || ck.Value == "" || ck.MaxAge < 0 || len(ck.Value) > 1024 {
			continue
		}
		if ck.Name != "wr_place_"+c.queue && ck.Name != "__Host-wr_place_"+c.queue {
			continue
		}
		c.mu.Lock()
		p := c.place
		c.mu.Unlock()
		if p.Token != ck.Value {
			c.setPlace(Place{Queue: c.queue, Token: ck.Value})
		}
	}
}

// challenge gets a proof-of-work challenge and its difficulty, checked
// against what the client pays.
func (c *Client) challenge(ctx context.Context) (string, int, error) {
	var w wireChallenge
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/challenge"}, &w, nil); err != nil {
		return "", 0, err
	}
	if w.Challenge == "" || len(w.Challenge) > 512 || strings.ContainsFunc(w.Challenge, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return "", 0, fmt.Errorf("%w: a challenge of %d bytes that is not printable ASCII", ErrBadAnswer, len(w.Challenge))
	}
	if w.Difficulty < 0 || w.Difficulty > maxDifficulty {
		return "", 0, fmt.Errorf("%w: difficulty %d", ErrBadAnswer, w.Difficulty)
	}
	if w.Difficulty > c.maxDifficulty {
		return "", 0, fmt.Errorf("%w: %d bits, above %d: %w", ErrTooHard, w.Difficulty, c.maxDifficulty,
			&Error{StatusCode: http.StatusForbidden, Code: ErrChallengeRequired.Code, Difficulty: w.Difficulty})
	}
	return w.Challenge, w.Difficulty, nil
}

// solve finds a nonce such that SHA-256(challenge ":" nonce) starts with
// difficulty zero bits, counting up from 0 as the waiting page's worker
// does (package challenge has the protocol), until ctx ends.
func solve(ctx context.Context, challenge string, difficulty int) (string, error) {
	buf := make([]byte, 0, len(challenge)+24)
	buf = append(buf, challenge...)
	buf = append(buf, ':')
	prefix := len(buf)
	for n := int64(0); ; n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return "", ctx.Err()
		}
		buf = strconv.AppendInt(buf[:prefix], n, 10)
		if zeroBits(sha256.Sum256(buf)) >= difficulty {
			return string(buf[prefix:]), nil
		}
	}
}

// zeroBits counts the leading zero bits of sum.
func zeroBits(sum [sha256.Size]byte) int {
	n := 0
	for _, b := range sum {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

// Status asks once where the place stands (sent again while the service
// is busy). Wait polls it as the service says; call Status alone for a
// one-off look. A fresh credential the answer carries is kept (and
// reported to OnPlace); a credential that can prove no place again is
// forgotten: the place moved to another device (ErrPlaceMoved), or the
// credential is not valid for the queue (ErrInvalidPlace).
func (c *Client) Status(ctx context.Context) (Ticket, error) {
	p, ok := c.Place()
	if !ok {
		return Ticket{}, ErrNoPlace
	}
	var w wireTicket
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/status", credential: true}, &w, nil)
	if spent(err) {
		c.forget(p)
	}
	if err != nil {
		return Ticket{}, err
	}
	return c.took(&w)
}

// took is the ticket of w, whose credential, if any, the client keeps,
// and when to poll next.
func (c *Client) took(w *wireTicket) (Ticket, error) {
	t, err := w.ticket(c.queue)
	if err != nil {
		return Ticket{}, err
	}
	if w.PlaceToken != "" {
		if len(w.PlaceToken) > 1024 {
			return Ticket{}, fmt.Errorf("%w: a place_token of %d bytes", ErrBadAnswer, len(w.PlaceToken))
		}
		c.setPlace(Place{Queue: c.queue, Token: w.PlaceToken, Member: clip(t.Member)})
	}
	c.mu.Lock()
	c.nextPoll = time.Time{}
	if t.Status == Waiting {
		c.nextPoll = c.clock.now().Add(c.pollWait(t.PollAfter))
	}
	c.mu.Unlock()
	return t, nil
}

// pollWait is the wait a ticket's PollAfter asks for, between MinPoll
// and maxWait.
func (c *Client) pollWait(d time.Duration) time.Duration {
	return min(max(d, c.minPoll), maxWait)
}

// forget drops p, unless the client holds another place by now.
func (c *Client) forget(p Place) {
	c.mu.Lock()
	same := c.place == p
	c.mu.Unlock()
	if same {
		c.setPlace(Place{})
	}
}

// Wait polls the place's status, each time when the last answer said
// (poll_after_ms, never sooner, and never sooner than MinPoll), until it
// is admitted: the ticket then carries the pass. observe, when not nil,
// sees every ticket (to show the position and the wait). It ends with
// ErrPlaceEnded (and the ticket, whose Reason says why) when the place
// ended, ErrPlaceMoved when another device took it, the context's error
// when ctx ends, or the last error once a call failed MaxAttempts times:
// calling Wait again goes on with the same place.
func (c *Client) Wait(ctx context.Context, observe func(Ticket)) (Ticket, error) {
	for {
		c.mu.Lock()
		due, held := c.nextPoll, c.place.Token != ""
		c.mu.Unlock()
		if !held {
			return Ticket{}, ErrNoPlace
		}
		if d := due.Sub(c.clock.now()); d > 0 {
			if err := c.clock.sleep(ctx, min(d, maxWait)); err != nil {
				return Ticket{}, err
			}
		}
		t, err := c.Status(ctx)
		if err != nil {
			return Ticket{}, err
		}
		if observe != nil {
			observe(t)
		}
		switch t.Status {
		case Entered:
			return t, nil
		case NotWaiting:
			if t.Reason != "" {
				return t, fmt.Errorf("%w: %s", ErrPlaceEnded, clip(t.Reason))
			}
			return t, ErrPlaceEnded
		}
	}
}

// Done ends the admission the pass is for (the app's own, or a user's
// pass a backend forwards): the pass is revoked and the slot goes to the
// next person. A pass whose admission had ended already is done too;
// ErrInvalidPass for a pass that is not valid or for another queue.
func (c *Client) Done(ctx context.Context, pass string) error {
	if pass == "" {
		return ErrInvalidPass
	}
	_, err := c.call(ctx, request{method: http.MethodPost, path: "/done", bearer: pass}, nil, nil)
	return err
}

// Leave gives up the place (or ends its admission) and forgets it. It
// is nil when there was nothing to leave.
func (c *Client) Leave(ctx context.Context) error {
	p, ok := c.Place()
	if !ok {
		return nil
	}
	_, err := c.call(ctx, request{method: http.MethodDelete, path: "/place", credential: true}, nil, nil)
	if err == nil || spent(err) {
		c.forget(p)
	}
	return err
}

// Forget drops the place the client holds without telling the service
// (OnPlace hears the zero Place): the next Enter makes a new member. The
// place itself stays in line until it is abandoned; Leave gives it up.
func (c *Client) Forget() {
	if p, ok := c.Place(); ok {
		c.forget(p)
	}
}

// spent reports whether err says the credential sent can never prove a
// place again: it moved to another device, or it is not valid for the
// queue.
func spent(err error) bool {
	return errors.Is(err, ErrPlaceMoved) || errors.Is(err, ErrInvalidPlace)
}

// Handoff makes a one-time hand-over of the waiting place to another
// device, which enters with EnterOptions.Handoff set to its Code or
// Token. Once it does, this client's next call answers ErrPlaceMoved and
// forgets the place. ErrNotWaiting for a place that is not waiting in
// line (admitted, or ended).
func (c *Client) Handoff(ctx context.Context) (Handoff, error) {
	p, ok := c.Place()
	if !ok {
		return Handoff{}, ErrNoPlace
	}
	var w wireHandoff
	_, err := c.call(ctx, request{method: http.MethodPost, path: "/handoff", credential: true}, &w, nil)
	if spent(err) {
		c.forget(p)
	}
	if err != nil {
		return Handoff{}, err
	}
	if w.Token == "" || w.Code == "" || len(w.Token) > 1024 || len(w.Code) > 64 {
		return Handoff{}, fmt.Errorf("%w: a hand-over without a token and a code", ErrBadAnswer)
	}
	h := Handoff{Token: w.Token, Code: w.Code, Path: clip(w.Path)}
	h.ExpiresAt, _ = time.Parse(time.RFC3339, w.ExpiresAt)
	return h, nil
}
