package proxy

import (
	"errors"
	"time"
)

// Limits bound what one client can hold of the reverse proxy:
// how slowly a request's body may arrive, and how many requests
// one admission, or one client address without a pass, has in flight.
// Without them one pass holder held 6,000 connections with POSTs that
// declared 1 MB and sent a byte every 20 s, and nobody else got in.
type Limits struct {
	// BodyGrace is how long a body may take before it must keep up with
	// BodyMinRate (WAITROOM_GATE_BODY_TIMEOUT): a body of n bytes must
	// have arrived by BodyGrace + n / BodyMinRate after the request.
	BodyGrace time.Duration
	// BodyMinRate is the least rate a body must average past its grace,
	// in bytes a second (WAITROOM_GATE_BODY_MIN_RATE).
	BodyMinRate int
	// PerPass caps the requests one admission (a pass's queue and sub,
	// however many passes were issued for it) has in flight on this
	// replica (WAITROOM_GATE_MAX_PER_PASS); past it, 429.
	PerPass int
	// PerClient caps the requests without a pass (bypassed paths and
	// clients, paths no room covers) one client address (IPv6: its /64)
	// has in flight on this replica (WAITROOM_GATE_MAX_PER_CLIENT).
	PerClient int
}

// Defaults of Limits. A 10 s grace and 1 KiB/s let a phone on a poor
// link post a form or a photo, and cut a drip of a byte every few
// seconds in 10 s. 32 requests at once are more than a browser opens to
// one site (6 connections over HTTP/1.1, a page's assets over HTTP/2);
// a client address without a pass gets twice that, for the many people
// behind one carrier NAT who fetch the bypassed assets.
const (
	DefaultBodyGrace   = 10 * time.Second
	DefaultBodyMinRate = 1024
	DefaultPerPass     = 32
	DefaultPerClient   = 64
)

// Bounds of Limits, for the settings' validation.
const (
	MaxBodyGrace   = 10 * time.Minute
	MaxBodyMinRate = 1 << 30
	MaxInFlight    = 100_000
)

// DefaultLimits are the limits New applies.
func DefaultLimits() Limits {
	return Limits{BodyGrace: DefaultBodyGrace, BodyMinRate: DefaultBodyMinRate, PerPass: DefaultPerPass, PerClient: DefaultPerClient}
}

// ErrInvalidLimits: a limit out of its bounds.
var ErrInvalidLimits = errors.New("proxy: body grace 1ms to 10m, body rate 1 B/s to 1 GiB/s, in-flight caps 1 to 100000")

// Validate checks l's bounds.
func (l Limits) Validate() error {
	if l.BodyGrace < time.Millisecond || l.BodyGrace > MaxBodyGrace || l.BodyMinRate < 1 || l.BodyMinRate > MaxBodyMinRate ||
		l.PerPass < 1 || l.PerPass > MaxInFlight || l.PerClient < 1 || l.PerClient > MaxInFlight {
		return ErrInvalidLimits
	}
	return nil
}

// Reasons a request is cut short or refused, for Options.OnCut (the
// metric waitroom_proxy_cut_total's reason label).
const (
	// CutSlowBody: the body fell behind Limits (408).
	CutSlowBody = "slow_body"
	// CutClientAbort: the client went away or broke off its body.
	CutClientAbort = "client_abort"
	// CutPassBusy: the admission had PerPass requests in flight (429).
	CutPassBusy = "pass_busy"
	// CutClientBusy: the client address had PerClient in flight (429).
	CutClientBusy = "client_busy"
)

// CutReasons are all the reasons, for a metric's series.
var CutReasons = []string{CutSlowBody, CutClientAbort, CutPassBusy, CutClientBusy}
