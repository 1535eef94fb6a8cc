// Package client is waitroom's queue API for a program written in Go: an
// app, or a backend that waits in line on a person's behalf. It enters
// (paying the proof of work a queue asks), polls when the service says
// (poll_after_ms, never sooner; Retry-After on 429 and 503; a jittered
// backoff when the network fails), moves a place to another device, and
// gets the entry pass, then ends the admission or leaves.
//
// A Client holds one place in one queue. The place is a credential the
// app keeps across restarts: Options.OnPlace reports each change, and
// Options.Place gives a saved one back. Refusals are *Error values with
// the API's stable codes, compared with errors.Is (ErrPlaceMoved,
// ErrHumanCheckRequired, ...). docs/APPS.md walks the same flow in JSON
// for apps written in other languages.
//
//	c, err := client.New(client.Options{BaseURL: "https://wait.example", Queue: "sale"})
//	if err != nil { ... }
//	if _, err := c.Enter(ctx, client.EnterOptions{}); err != nil { ... }
//	t, err := c.Wait(ctx, func(t client.Ticket) { show(t.Position, t.ETA) })
//	if err != nil { ... }
//	order(t.Pass)            // the order page checks the pass
//	_ = c.Done(ctx, t.Pass)  // and the slot goes to the next person
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of Options' zero fields.
const (
	DefaultMaxAttempts    = 6
	DefaultBackoff        = 500 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	DefaultMinPoll        = 250 * time.Millisecond
	DefaultMaxDifficulty  = 26 // about 67 million hashes: a few seconds on one core
	DefaultMaxAnswerBytes = 64 << 10
	defaultTimeout        = 30 * time.Second
)

// Bounds on what a service's answer can make the client do.
const (
	// maxWait caps any wait an answer asks for (poll_after_ms,
	// Retry-After): the service asks at most a minute; a broken one
	// cannot park the client for days.
	maxWait = 10 * time.Minute
	// maxDifficulty is the protocol's ceiling (a queue's
	// challenge_difficulty and the price of a place stay within it).
	maxDifficulty = 32
	// maxSolves bounds the challenges one Enter pays: a solution refused
	// again and again (a clock far off, a price that rose) ends with
	// ErrChallengeRequired, not a loop.
	maxSolves = 3
)

// Options configure a Client. BaseURL and Queue are required.
type Options struct {
	// BaseURL is the service's address, "https://wait.example" (a path
	// prefix, for a service behind one, is kept).
	BaseURL string
	// Queue is the queue's name.
	Queue string
	// HTTPClient sends the calls; nil: a client of its own with a 30 s
	// timeout. Its Transport is where to add headers, proxies or TLS.
	HTTPClient *http.Client
	// Place is a place saved before (from OnPlace): the client starts
	// holding it. Its Queue must be Queue.
	Place *Place
	// OnPlace is called with the place each time it changes: a new
	// credential from enter or status, and the zero Place when it is
	// gone (left, moved to another device). Save it, to keep the place
	// when the app restarts. It runs on the goroutine of the call that
	// changed the place.
	OnPlace func(Place)
	// MaxAttempts bounds the sends of one call when the service is busy
	// or away (429, 502, 503, 504) or the network fails; 0:
	// DefaultMaxAttempts; 1: never again.
	MaxAttempts int
	// Backoff is the first wait before sending again, doubled each time
	// up to MaxBackoff, and jittered (half to all of it); never shorter
	// than the Retry-After the service asks. 0: DefaultBackoff,
	// DefaultMaxBackoff.
	Backoff, MaxBackoff time.Duration
	// MinPoll is the shortest wait between two polls whatever the
	// answer says (a broken answer of 0 cannot make Wait spin); 0:
	// DefaultMinPoll, which is below what the service asks but near
	// the head of a queue whose interval is about a second or less.
	MinPoll time.Duration
	// MaxDifficulty is the hardest proof of work Enter pays, in leading
	// zero bits (2^bits hashes on average); harder: ErrTooHard. 0:
	// DefaultMaxDifficulty; at most 32.
	MaxDifficulty int
	// MaxAnswerBytes bounds an answer's body; 0: DefaultMaxAnswerBytes
	// (a ticket with its pass is about 1.5 KB).
	MaxAnswerBytes int64
	// UserAgent is sent with every call; "": "waitroom-client".
	UserAgent string
}

// Client calls one queue of one service and holds one place there. Its
// methods are safe for concurrent use.
type Client struct {
	http          *http.Client
	base          string // BaseURL without its trailing slash
	queue         string
	queuePath     string // base + "/api/v1/queues/" + escaped queue
	onPlace       func(Place)
	maxAttempts   int
	backoff       time.Duration
	maxBackoff    time.Duration
	minPoll       time.Duration
	maxDifficulty int
	maxBody       int64
	userAgent     string
	clock         clock

	mu       sync.Mutex
	place    Place     // Token "": none
	nextPoll time.Time // when the last ticket said to ask again
}

// New checks o once and returns its Client.
func New(o Options) (*Client, error) {
	u, err := url.Parse(o.BaseURL)
	switch {
	case err != nil:
		return nil, fmt.Errorf("waitroom client: BaseURL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return nil, fmt.Errorf("waitroom client: BaseURL %q: want http(s)://host", o.BaseURL)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return nil, fmt.Errorf("waitroom client: BaseURL %q: no query, fragment or user info", o.BaseURL)
	}
	if o.Queue == "" || len(o.Queue) > 256 || strings.ContainsAny(o.Queue, "/?#") {
		return nil, fmt.Errorf("waitroom client: Queue %q: want a queue's name", o.Queue)
	}
	if o.MaxAttempts < 0 || o.Backoff < 0 || o.MaxBackoff < 0 || o.MinPoll < 0 || o.MaxAnswerBytes < 0 {
		return nil, errors.New("waitroom client: MaxAttempts, Backoff, MaxBackoff, MinPoll and MaxAnswerBytes cannot be negative")
	}
	if o.MaxDifficulty < 0 || o.MaxDifficulty > maxDifficulty {
		return nil, fmt.Errorf("waitroom client: MaxDifficulty %d: want 0…%d", o.MaxDifficulty, maxDifficulty)
	}
	c := &Client{
		http:          o.HTTPClient,
		base:          strings.TrimSuffix(u.String(), "/"),
		queue:         o.Queue,
		onPlace:       o.OnPlace,
		maxAttempts:   cmp(o.MaxAttempts, DefaultMaxAttempts),
		backoff:       cmp(o.Backoff, DefaultBackoff),
		maxBackoff:    cmp(o.MaxBackoff, DefaultMaxBackoff),
		minPoll:       cmp(o.MinPoll, DefaultMinPoll),
		maxDifficulty: cmp(o.MaxDifficulty, DefaultMaxDifficulty),
		maxBody:       cmp(o.MaxAnswerBytes, DefaultMaxAnswerBytes),
		userAgent:     o.UserAgent,
		clock:         realClock{},
	}
	if c.backoff > c.maxBackoff {
		return nil, fmt.Errorf("waitroom client: Backoff %s is above MaxBackoff %s", c.backoff, c.maxBackoff)
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: defaultTimeout}
	}
	if c.userAgent == "" {
		c.userAgent = "waitroom-client"
	}
	c.queuePath = c.base + "/api/v1/queues/" + url.PathEscape(o.Queue)
	if p := o.Place; p != nil {
		if p.Queue != o.Queue || p.Token == "" {
			return nil, fmt.Errorf("waitroom client: Place is for queue %q with token set %t; want queue %q and a token", p.Queue, p.Token != "", o.Queue)
		}
		c.place = *p
	}
	return c, nil
}

// cmp is v, or def for the zero value.
func cmp[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Place is the place the client holds, and whether it holds one.
func (c *Client) Place() (Place, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.place, c.place.Token != ""
}

// setPlace records the place the service gave (p.Token "": none) and
// reports it to OnPlace when it changed. Not under c.mu.
func (c *Client) setPlace(p Place) {
	c.mu.Lock()
	changed := p != c.place
	c.place = p
	if p.Token == "" {
		c.nextPoll = time.Time{}
	}
	c.mu.Unlock()
	if changed && c.onPlace != nil {
		c.onPlace(p)
	}
}

// clock is time for the client: the real one, or a test's.
type clock interface {
	now() time.Time
	// sleep waits d, or until ctx ends (its error).
	sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) now() time.Time { return time.Now() }

func (realClock) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// request is one API call: its method, path under the queue, body and
// bearer credential.
type request struct {
	method string
	path   string // after queuePath: "/enter"
	body   []byte // nil: none
	bearer string // a pass (done)
	// credential: send the place credential the client holds at each
	// send (an enter that failed may have given it one since).
	credential bool
}

// answer is what a call brought back besides its decoded body.
type answer struct {
	status int
	header http.Header
}

// call sends r, again after a wait while the service is busy or away or
// the network fails, up to maxAttempts sends in all, and decodes a 2xx
// body into v (nil: none read). failed, when set, is told the header of
// every answer that was not a success. The error is an *Error for a refusal, a
// *netError (wrapping the cause) for no answer, ErrBadAnswer, or the
// context's error.
func (c *Client) call(ctx context.Context, r request, v any, failed func(http.Header)) (answer, error) {
	for attempt := 1; ; attempt++ {
		a, err := c.once(ctx, r, v)
		if err != nil && failed != nil && a.header != nil {
			failed(a.header)
		}
		if err == nil || !retryable(err) || attempt >= c.maxAttempts || ctx.Err() != nil {
			if ctx.Err() != nil && err != nil {
				return a, ctx.Err()
			}
			return a, err
		}
		if serr := c.clock.sleep(ctx, c.retryDelay(attempt, err)); serr != nil {
			return a, serr
		}
	}
}

// retryDelay is the wait before send attempt+1 after err: the backoff of
// that attempt, jittered over its upper half, and at least the
// Retry-After err carries.
func (c *Client) retryDelay(attempt int, err error) time.Duration {
	d := c.backoff
	for i := 1; i < attempt && d < c.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.maxBackoff)
	d = d/2 + rand.N(d/2+1)
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > d {
		d = e.RetryAfter
	}
	return min(d, maxWait)
}

// once sends r once.
func (c *Client) once(ctx context.Context, r request, v any) (answer, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.queuePath+r.path, body)
	if err != nil {
		return answer{}, err
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	bearer := r.bearer
	if r.credential {
		p, _ := c.Place()
		bearer = p.Token
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return answer{}, ctx.Err()
		}
		return answer{}, &netError{err}
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header}
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return a, ctx.Err()
		}
		return a, &netError{err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// A refusal's body cut short is no error's JSON: a proxy's page,
		// answered by its status alone (a 503 is still sent again).
		return a, c.refusal(resp, b[:min(int64(len(b)), c.maxBody)])
	}
	if int64(len(b)) > c.maxBody {
		return a, fmt.Errorf("%w: %d %s: the body is over %d bytes", ErrBadAnswer, resp.StatusCode, r.path, c.maxBody)
	}
	if v == nil {
		return a, nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return a, fmt.Errorf("%w: %d %s: %v", ErrBadAnswer, resp.StatusCode, r.path, err)
	}
	return a, nil
}

// refusal is the *Error of a non-2xx answer with body b: the API's error
// JSON, or an Error without a code for anything else (a proxy's page).
func (c *Client) refusal(resp *http.Response, b []byte) *Error {
	e := &Error{StatusCode: resp.StatusCode, Difficulty: -1}
	var w wireError
	if json.Unmarshal(b, &w) == nil {
		d := w.Error
		e.Code, e.Message, e.Field = clip(d.Code), clip(d.Message), clip(d.Field)
		e.Provider, e.SiteKey, e.ScriptURL = clip(d.Provider), clip(d.SiteKey), clip(d.ScriptURL)
		if d.Difficulty != nil {
			e.Difficulty = *d.Difficulty
		}
		if d.Lane != nil {
			e.Lane = clip(*d.Lane)
		}
		e.OpensAt, _ = time.Parse(time.RFC3339, d.OpensAt)
		e.PrequeueFrom, _ = time.Parse(time.RFC3339, d.PrequeueFrom)
		if at, err := time.Parse(time.RFC3339, d.RetryAt); err == nil {
			e.RetryAfter = at.Sub(c.clock.now())
		}
	}
	if ra := retryAfter(resp.Header.Get("Retry-After"), c.clock.now()); ra > 0 {
		e.RetryAfter = ra
	}
	e.RetryAfter = min(max(e.RetryAfter, 0), maxWait)
	return e
}

// clip bounds a string an answer gave, for errors and logs.
func clip(s string) string {
	if len(s) > 512 {
		return s[:512]
	}
	return s
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	if n, err := strconv.ParseInt(h, 10, 64); err == nil {
		return time.Duration(min(max(n, 0), int64(maxWait/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return t.Sub(now)
	}
	return 0
}
