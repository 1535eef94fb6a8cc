// Package humancheck verifies the token of a human check (Cloudflare
// Turnstile, hCaptcha or Google reCAPTCHA) with its provider's siteverify.
//
// A network that holds many places pays a rising proof of work, and a
// crowd behind one carrier NAT pays for its neighbours; a human check
// costs a person the same wherever they sit. The room asks for one, and
// falls back to the proof of work at its ceiling while the provider is
// away (ErrUnavailable, Available): the check is never skipped, and a
// slow provider never holds a request longer than Timeout.
//
// The three providers share one siteverify: a POST of the form fields
// secret, response and remoteip, answered with JSON success, hostname,
// action and error-codes. A token is good once: Verify marks it used in
// Redis before it asks the provider (see Verify).
package humancheck

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

const (
	// MaxTokenBytes bounds a token: the providers' are about 2 KiB at most.
	MaxTokenBytes = 4096
	// maxAnswerBytes bounds the siteverify answer read.
	maxAnswerBytes = 64 << 10
	// usedFor is how long a used token is remembered: longer than the
	// providers keep one valid (300 s), so a replay is always caught here
	// even when the provider's own memory of it has gone.
	usedFor = 10 * time.Minute
	// failuresToOpen unavailable answers in a row mark the provider away.
	failuresToOpen = 3
	// probeEvery is how often, while the provider is away, Available says
	// yes once, so that a visitor's token probes it.
	probeEvery = 5 * time.Second
	// maxCodes and maxCodeBytes bound what of error-codes is kept.
	maxCodes, maxCodeBytes = 4, 64
)

// Marker is the Redis a Checker needs: a *redis.Client, ClusterClient or
// Ring.
type Marker interface {
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd
}

// Public is what a page needs to show the provider's widget: for the 403
// human_check_required answer and the page's Content-Security-Policy.
type Public struct {
	Provider  string `json:"provider"`
	SiteKey   string `json:"sitekey"`
	ScriptURL string `json:"script_url"`
}

// Health is the provider's state as this process saw it.
type Health struct {
	Provider            string
	Healthy             bool // false: away (failuresToOpen unavailable answers in a row, no success since)
	LastOK              time.Time
	LastFailure         time.Time
	ConsecutiveFailures int
}

// Checker verifies tokens with one provider. Safe for concurrent use.
type Checker struct {
	opts  Options
	hosts map[string]bool
	rdb   Marker
	log   *slog.Logger
	http  *http.Client
	slots chan struct{} // the calls in flight (MaxInFlight)

	mu        sync.Mutex
	health    Health
	probing   bool      // while away: a call is out as the probe
	nextProbe time.Time // while away: when Available next says yes
	now       func() time.Time
}

// New checks opts (Validate) and returns their Checker. With Provider
// Off it returns a Checker whose Verify is always ErrUnavailable and whose
// Available is false.
func New(opts Options, rdb Marker, log *slog.Logger) (*Checker, error) {
	opts = opts.WithDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Provider != Off && rdb == nil {
		return nil, errors.New("humancheck: a Redis client is required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Checker{
		opts:  opts,
		hosts: map[string]bool{},
		rdb:   rdb,
		log:   log.With("component", "humancheck", "provider", string(opts.Provider)),
		slots: make(chan struct{}, opts.MaxInFlight),
		now:   time.Now,
	}
	for _, h := range opts.Hosts {
		c.hosts[strings.ToLower(strings.TrimSpace(h))] = true
	}
	c.http = &http.Client{
		Timeout: opts.Timeout,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: opts.Timeout}).DialContext,
			TLSHandshakeTimeout:   opts.Timeout,
			ResponseHeaderTimeout: opts.Timeout,
			MaxIdleConnsPerHost:   opts.MaxInFlight,
			MaxConnsPerHost:       opts.MaxInFlight,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		},
		// siteverify answers in place; a redirect is a misconfiguration,
		// and following it would send the secret elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c.health = Health{Provider: string(opts.Provider), Healthy: opts.Provider != Off}
	return c, nil
}

// Enabled reports whether a provider is configured.
func (c *Checker) Enabled() bool { return c != nil && c.opts.Provider != Off }

// Public is what the page needs to show the widget.
func (c *Checker) Public() Public {
	return Public{Provider: string(c.opts.Provider), SiteKey: c.opts.SiteKey, ScriptURL: c.opts.ScriptURL}
}

// Verify checks a widget's token for the visitor at remoteIP (empty:
// not sent). nil: a person solved it, on a host of the room, and it was
// not presented before. Otherwise an *Error of kind ErrFailed or
// ErrUnavailable.
//
// The token is marked used before the provider is asked, not after: two
// requests racing with one token would otherwise both be in flight, and a
// provider's own duplicate check is not something to lean on (its
// memory and ours differ, and a stand-in may have none). If the provider
// could not judge (ErrUnavailable), the mark is lifted, so the visitor's
// retry with the same token is judged; a refusal keeps it.
func (c *Checker) Verify(ctx context.Context, token, remoteIP string) error {
	if !c.Enabled() {
		return unavailable(ReasonOff)
	}
	if token == "" || len(token) > MaxTokenBytes {
		return failed(ReasonMalformed)
	}
	probe, ok := c.admit()
	if !ok {
		return unavailable(ReasonCircuitOpen)
	}
	defer c.endProbe(probe)
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	default:
		// A full pool answers at once: queuing would hold the visitor's
		// request for calls that are already too slow.
		return unavailable(ReasonBusy)
	}

	key := usedKey(token)
	fresh, err := c.rdb.SetNX(ctx, key, "1", usedFor).Result()
	if err != nil {
		c.log.WarnContext(ctx, "human check: cannot mark the token used", "err", err)
		return unavailable(ReasonStore)
	}
	if !fresh {
		return failed(ReasonReused)
	}
	err = c.ask(ctx, token, remoteIP)
	if errors.Is(err, ErrUnavailable) {
		// The mark came from this call alone: no other could take it.
		// WithoutCancel: a cancelled request must still lift it.
		if derr := c.rdb.Del(context.WithoutCancel(ctx), key).Err(); derr != nil {
			c.log.WarnContext(ctx, "human check: cannot lift the mark of an unjudged token", "err", derr)
		}
	}
	if ctx.Err() == nil {
		// A caller that gave up (a closed tab) says nothing of the provider.
		c.note(ctx, err)
	}
	return err
}

// usedKey is the Redis key marking token used: named by its SHA-256, so
// neither Redis nor its dumps hold a usable token.
func usedKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return rediskeys.HumanToken(hex.EncodeToString(sum[:]))
}

// answer is siteverify's JSON. Success is a pointer so that an answer
// without it is nonsense, not a refusal.
type answer struct {
	Success    *bool    `json:"success"`
	Hostname   string   `json:"hostname"`
	Action     string   `json:"action"`
	ErrorCodes []string `json:"error-codes"`
}

// ask makes the siteverify call and judges its answer.
func (c *Checker) ask(ctx context.Context, token, remoteIP string) error {
	form := url.Values{"secret": {c.opts.Secret}, "response": {token}}
	if remoteIP != "" {
		form.Set("remoteip", remoteIP)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.opts.VerifyURL, strings.NewReader(form.Encode()))
	if err != nil {
		return unavailable(ReasonUnreachable) // a valid URL was checked at New: not reached
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		// url.Error names the method and address, never the body: the
		// secret is in the body alone.
		if ctx.Err() != nil || isTimeout(err) {
			return unavailable(ReasonTimeout)
		}
		c.log.DebugContext(ctx, "human check: siteverify call failed", "err", err)
		return unavailable(ReasonUnreachable)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxAnswerBytes+1))
	if err != nil {
		if ctx.Err() != nil || isTimeout(err) {
			return unavailable(ReasonTimeout)
		}
		return unavailable(ReasonUnreachable)
	}
	if res.StatusCode != http.StatusOK {
		c.log.DebugContext(ctx, "human check: siteverify answered", "status", res.StatusCode)
		return unavailable(ReasonStatus)
	}
	return c.judge(ctx, body)
}

// judge turns siteverify's answer into Verify's result.
func (c *Checker) judge(ctx context.Context, body []byte) error {
	var a answer
	if len(body) > maxAnswerBytes || json.Unmarshal(body, &a) != nil || a.Success == nil {
		return unavailable(ReasonUnparsable)
	}
	codes := boundCodes(a.ErrorCodes)
	if !*a.Success {
		for _, code := range a.ErrorCodes {
			if misconfigured[code] {
				// Every visitor would fail alike: not their doing.
				c.log.ErrorContext(ctx, "human check: the provider refuses this room's request; check the site key and secret", "error_codes", codes)
				return unavailable(ReasonMisconfig, codes...)
			}
		}
		c.log.DebugContext(ctx, "human check: refused", "error_codes", codes)
		return failed(ReasonRefused, codes...)
	}
	if !c.hosts[strings.ToLower(a.Hostname)] {
		return failed(ReasonHostname)
	}
	return nil
}

// misconfigured are the error-codes that blame the room's configuration
// or the provider, not the visitor's token.
var misconfigured = map[string]bool{
	"missing-input-secret":    true,
	"invalid-input-secret":    true,
	"sitekey-secret-mismatch": true,
	"bad-request":             true,
	"internal-error":          true,
}

func boundCodes(codes []string) []string {
	var out []string
	for _, c := range codes {
		if len(out) == maxCodes {
			break
		}
		if len(c) > maxCodeBytes {
			c = c[:maxCodeBytes]
		}
		out = append(out, c)
	}
	return out
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// --- health: a small circuit over the provider's unavailability.

// admit says whether a call may go to the provider now: always while it
// is healthy; while it is away, one call at a time (the probe).
func (c *Checker) admit() (probe, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.health.Healthy {
		return false, true
	}
	if c.probing {
		return false, false
	}
	c.probing = true
	return true, true
}

func (c *Checker) endProbe(probe bool) {
	if !probe {
		return
	}
	c.mu.Lock()
	c.probing = false
	c.mu.Unlock()
}

// note records the outcome of a call to the provider: any judgement (nil
// or ErrFailed) shows it is there; ErrUnavailable counts towards away.
// What Verify answers without asking it (a full pool, a used token, a
// Redis failure) is not noted: it says nothing of the provider.
func (c *Checker) note(ctx context.Context, err error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	h := &c.health
	if !errors.Is(err, ErrUnavailable) {
		if !h.Healthy {
			c.log.InfoContext(ctx, "human check: provider back", "after_failures", h.ConsecutiveFailures)
		}
		h.Healthy, h.LastOK, h.ConsecutiveFailures = true, now, 0
		return
	}
	h.LastFailure = now
	h.ConsecutiveFailures++
	if h.Healthy && h.ConsecutiveFailures >= failuresToOpen {
		h.Healthy = false
		c.nextProbe = now.Add(probeEvery)
		c.log.WarnContext(ctx, "human check: provider away; the proof of work stands in", "reason", Reason(err), "failures", h.ConsecutiveFailures)
	}
}

// Health is the provider's state as this process saw it.
func (c *Checker) Health() Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.health
}

// Available reports whether to ask a visitor for the human check now:
// true while the provider is healthy; while it is away, true once every
// few seconds (that visitor's token then probes it), false otherwise:
// ask the proof of work at its ceiling instead. Always false when Off.
func (c *Checker) Available() bool {
	if !c.Enabled() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.health.Healthy {
		return true
	}
	now := c.now()
	if now.Before(c.nextProbe) {
		return false
	}
	c.nextProbe = now.Add(probeEvery)
	return true
}
