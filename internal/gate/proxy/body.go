package proxy

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// body is a request body held to Limits on its way upstream. Each read
// moves the connection's read deadline to when the bytes read so far
// must have arrived by (the grace, then BodyMinRate), so a read blocked
// on a client that stopped sending ends then, whatever the body
// declared. At its end the deadline is cleared: a response may then
// stream for as long as both ends keep it open.
//
// It also tells the controller's view (Observe) what a client did: when
// its last byte came (the upstream's time counts from there, not from a
// drip's first byte) and whether the client, not the upstream, broke the
// exchange off.
type body struct {
	io.ReadCloser
	rc    *http.ResponseController
	start time.Time
	grace time.Duration
	rate  float64 // bytes a second

	mu     sync.Mutex
	n      int64
	last   time.Time // the last byte, or the end, arrived
	err    error     // the client's failure to send the body, if any
	ended  bool      // the body was read to its end
	closed bool      // the handler returned: the connection is not ours to touch
}

// holdBody sets r's read deadline by l and returns r with its body
// wrapped (b nil: r has no body, and no read deadline). The write
// deadline is cleared either way: responses may stream.
func holdBody(w http.ResponseWriter, r *http.Request, l Limits, now time.Time) (*http.Request, *body) {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	if r.Body == nil || r.Body == http.NoBody {
		// The server's own ReadTimeout is for waitroom's short exchanges;
		// with no body to wait for, an upgraded connection (a WebSocket)
		// or a streamed answer must not end by it.
		_ = rc.SetReadDeadline(time.Time{})
		return r, nil
	}
	b := &body{ReadCloser: r.Body, rc: rc, start: now, grace: l.BodyGrace, rate: float64(l.BodyMinRate), last: now}
	_ = rc.SetReadDeadline(b.deadline())
	r2 := new(http.Request)
	*r2 = *r
	r2.Body = b
	return r2, b
}

// deadline is when the bytes read so far, and the next, must have come.
func (b *body) deadline() time.Time {
	return b.start.Add(b.grace + time.Duration(float64(b.n)/b.rate*float64(time.Second)))
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > 0 {
		b.n += int64(n)
		b.last = now
	}
	switch {
	case errors.Is(err, io.EOF):
		b.last, b.ended = now, true
		if !b.closed {
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	case err != nil:
		if b.err == nil {
			b.err = err
		}
	case n > 0 && !b.closed:
		_ = b.rc.SetReadDeadline(b.deadline())
	}
	return n, err
}

// done marks the handler returned: later reads (a transport still
// draining) leave the connection's deadlines alone, since it may be
// serving the next request.
func (b *body) done() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}

// sentAt is when the body's last byte arrived (or the request, before
// any): the upstream's time to answer counts from there.
func (b *body) sentAt() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// clientFailed tells whether the client broke the body off (aborted),
// and whether by falling behind Limits (slow). A body past its deadline
// is slow even before its read has said so: the server cancels the
// request as the read fails, and the transport may report that first.
func (b *body) clientFailed(now time.Time) (failed, slow bool) {
	if b == nil {
		return false, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	slow = errors.Is(b.err, os.ErrDeadlineExceeded) || (!b.ended && !now.Before(b.deadline()))
	return b.err != nil || slow, slow
}
