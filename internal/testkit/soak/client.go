package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/place"
)

// Queue is the queue every phase uses (each phase has a Redis of its own).
const Queue = "soak"

// ticket is the part of enter's and status's answer the soak reads.
type ticket struct {
	UserID      string `json:"user_id"`
	Status      string `json:"status"`
	PollAfterMS int64  `json:"poll_after_ms"`
	Pass        string `json:"pass"`
	Estimated   bool   `json:"position_estimated"`
}

// caller makes one simulated user's calls with its own credential and
// client address, each to a replica picked at random.
type caller struct {
	http   *http.Client
	urls   []string
	addr   string // X-Forwarded-For: the user's own address
	token  string // the place credential (cookie value); "" before the first enter
	member string // the member id the credential names
	pass   string // the last entry pass seen
	pick   func(n int) int
	// places checks the credentials the service sets: the soak starts
	// the replicas with its own WAITROOM_SECRET, so it holds the key.
	places *place.Credentials
}

// result is one call's record, and the answer when there was one.
type result struct {
	op     Op
	ticket ticket
}

// do sends one call. A replica that refuses the connection (down) never
// saw the call, so the next one is tried, up to once each; Sent is the
// attempt that got through.
func (c *caller) do(ctx context.Context, kind Kind) result {
	var (
		resp *http.Response
		err  error
		sent time.Time
	)
	start := c.pick(len(c.urls))
	for i := range c.urls {
		req := c.request(ctx, kind, c.urls[(start+i)%len(c.urls)])
		sent = time.Now()
		resp, err = c.http.Do(req)
		if err == nil || !refusedConn(err) {
			break
		}
	}
	r := result{op: Op{Member: c.member, Kind: kind, Sent: sent}}
	if err != nil {
		r.op.Ended = time.Now()
		r.op.Outcome = Unknown
		if refusedConn(err) {
			r.op.Outcome = Refused // every replica down: nothing was sent
		}
		return r
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.op.Ended = time.Now()
	// Even a 503 enter sets the credential: the place may have been made.
	// The soak runs WAITROOM_COOKIE_SECURE=false: plain cookie names.
	for _, ck := range resp.Cookies() {
		if ck.Name == place.CookieName(Queue, false) && ck.Value != "" && ck.MaxAge >= 0 {
			// A credential that does not verify names no member the
			// soak can hold the service to: the caller keeps its own.
			if m, _, err := c.places.Verify(Queue, ck.Value); err == nil {
				c.token, c.member = ck.Value, m
				r.op.Member = m
			}
		}
	}
	switch {
	case err != nil || resp.StatusCode >= 500:
		r.op.Outcome = Unknown
	case resp.StatusCode >= 300:
		r.op.Outcome = Refused
	default:
		r.op.Outcome = OK
		if kind == Enter || kind == Status {
			if err := json.Unmarshal(body, &r.ticket); err != nil {
				r.op.Outcome = Unknown
				break
			}
			r.op.Status = r.ticket.Status
			r.op.Estimated = r.ticket.Estimated
			if r.ticket.Status == "ENTERED" {
				c.pass = r.ticket.Pass
				// Read unverified: the service has just handed this
				// pass over, the soak only wants its admission's start
				// (adm), and the signing key is the replicas' own
				// (made and shared through Redis).
				if cl, err := pass.UnverifiedClaims(r.ticket.Pass); err == nil {
					r.op.Adm = cl.AdmittedAt.UnixMilli()
				}
			}
		}
	}
	return r
}

func (c *caller) request(ctx context.Context, kind Kind, base string) *http.Request {
	u := base + "/api/v1/queues/" + Queue
	var req *http.Request
	switch kind {
	case Enter:
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, u+"/enter", bytes.NewReader([]byte("{}")))
		req.Header.Set("Content-Type", "application/json")
	case Status:
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, u+"/status", nil)
	case Leave:
		req, _ = http.NewRequestWithContext(ctx, http.MethodDelete, u+"/place", nil)
	case Done:
		// The order page's call, with the user's pass.
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, u+"/done", nil)
		req.Header.Set("Authorization", "Bearer "+c.pass)
	}
	if c.token != "" && kind != Done {
		req.AddCookie(&http.Cookie{Name: place.CookieName(Queue, false), Value: c.token})
	}
	req.Header.Set("X-Forwarded-For", c.addr)
	return req
}

// refusedConn reports whether err is a connection the replica refused:
// the request never left the client.
func refusedConn(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// clientAddr is simulated user i's own address, so the per-client rate
// limits see one client per user, as with real users.
func clientAddr(i int) string {
	return fmt.Sprintf("10.%d.%d.%d", (i>>16)&255, (i>>8)&255, i&255)
}
