package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/gate/command"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/passledger"
)

// This file is the pass check waitroom's own gate is made of (NewGate):
// the checker the gate package asks, over the pass cache, the revocation
// check and the sharing record; proxy.go is the reverse proxy behind it.

// Recheck is how often waitroom's gate asks Redis whether a pass it let in
// is still current: a revoked pass stops opening within it (plus one
// check), and an admitted user costs Redis one read per period however
// many requests they make.
const Recheck = 2 * time.Second

// GateOptions are what waitroom's own gate is made of.
type GateOptions struct {
	// Queue is the room of the whole site, or with Routes of the paths no
	// route covers (gate.Options.Queue).
	Queue string
	// Routes send the site's paths to several rooms (gate.Options.Routes).
	Routes []gate.Route
	Passes *pass.Passes
	// Admissions is the store the passes are re-checked against.
	Admissions pass.Admissions
	// Bypass lists path prefixes that pass without a pass.
	Bypass []string
	// BypassCIDRs are the clients that pass without a pass, by the address
	// clientip.FromContext gives (the trusted-proxy rules').
	BypassCIDRs clientip.Ranges
	// InsecureCookie: plain-http development only (gate.Options).
	InsecureCookie bool
	// Uses makes pass-link exchanges single-use across replicas and, with
	// MaxClients > 0 in it, cancels a pass used from too many addresses
	// (the client's address comes from clientip.FromContext). nil: neither
	// (pass-link exchanges single-use in this process only).
	Uses *passledger.Uses
	// Revoke ends a member's admission, for a shared pass.
	Revoke func(ctx context.Context, queue, member string) error
	// Fail is what the gate does while Redis cannot be reached
	// (WAITROOM_GATE_FAIL; gate.Options.Fail).
	Fail gate.FailMode
	// Ping tells whether Redis answers (redisconn.Pinger.Ping, on a
	// connection of its own): the gate asks it at most once a second, so
	// it knows Redis is away before a pass holder does, and when it is
	// back; only a failed ping makes Redis away. nil: it learns from the
	// checks.
	Ping func(ctx context.Context) error
	// OnFailOpen counts each request let through unchecked (gate.Options).
	OnFailOpen func(queue string)
	// Logger gets the fail-open line, at most once a minute.
	Logger *slog.Logger
	// Unavailable is the page browsers get while passes cannot be
	// checked (gate.Options.Unavailable): the service gives its styled
	// outage page.
	Unavailable http.Handler
	// Commands carries out what the order page says back in
	// gate.HeaderCommand (nil: removed, nothing done).
	Commands *command.Runner
	// SoldOut answers those without a pass while their room's sale is
	// closed (gate.Options.SoldOut): the service gives its sold-out page.
	SoldOut gate.SoldOut
}

// NewGate returns waitroom's own gate for o.Queue and o.Routes: passes
// checked with this service's keys, cached, and re-checked against the
// store every Recheck. Refused browsers go to the waiting page of their
// room's queue on this site.
func NewGate(ctx context.Context, o GateOptions) (*gate.Gate, error) {
	cache, err := pass.NewCache(o.Passes.Verifier, pass.Current(o.Admissions), Recheck, gate.MaxCachedPasses)
	if err != nil {
		return nil, err
	}
	var passLinks gate.PassLinks
	if o.Uses != nil {
		passLinks = o.Uses
	}
	var bypassClient func(*http.Request) bool
	if len(o.BypassCIDRs) > 0 {
		bypassClient = func(r *http.Request) bool {
			a, ok := clientip.FromContext(r.Context())
			return ok && o.BypassCIDRs.Contains(a)
		}
	}
	var commander gate.Commander
	if o.Commands != nil {
		commander = runnerCommander{o.Commands}
	}
	var c gate.Checker = &checker{cache: cache, verifier: o.Passes.Verifier, uses: o.Uses, revoke: o.Revoke}
	if o.Ping != nil {
		c = pingingChecker{c.(*checker), o.Ping}
	}
	return gate.New(ctx, gate.Options{
		Queue:          o.Queue,
		Routes:         o.Routes,
		Checker:        c,
		Fail:           o.Fail,
		OnFailOpen:     o.OnFailOpen,
		Logger:         o.Logger,
		WaitingPage:    "/q/{queue}",
		Bypass:         o.Bypass,
		BypassClient:   bypassClient,
		InsecureCookie: o.InsecureCookie,
		PassLinks:      passLinks,
		Unavailable:    o.Unavailable,
		Commander:      commander,
		SoldOut:        o.SoldOut,
	})
}

// runnerCommander carries the order page's commands out in this process
// (gate.Commander), naming the client and the request in the audit entry.
type runnerCommander struct{ r *command.Runner }

func (c runnerCommander) Command(ctx context.Context, queue, token, cmd string) string {
	req := command.Request{Queue: queue, Command: cmd, Pass: token, RequestID: middleware.GetReqID(ctx)}
	if a, ok := clientip.FromContext(ctx); ok {
		req.Client = a.String()
	}
	return c.r.Run(ctx, req)
}

// checker is waitroom's own pass check: the cache, then the addresses the
// pass is used from.
type checker struct {
	cache    *pass.Cache
	verifier *pass.Verifier
	uses     *passledger.Uses // nil: no sharing check
	revoke   func(ctx context.Context, queue, member string) error
}

func (c *checker) Check(ctx context.Context, token string) (gate.Claims, bool, error) {
	cl, ok, err := c.check(ctx, token)
	return cl, ok, busy(err)
}

func (c *checker) check(ctx context.Context, token string) (gate.Claims, bool, error) {
	pc, err := c.cache.Check(ctx, token)
	switch {
	case errors.Is(err, pass.ErrRevoked) && c.uses != nil:
		return gate.Claims{}, false, c.whyRevoked(ctx, token)
	case errors.Is(err, pass.ErrInvalid):
		return gate.Claims{}, false, nil
	case err != nil:
		return gate.Claims{}, false, err
	}
	if client, ok := clientip.FromContext(ctx); ok && c.uses != nil {
		shared, err := c.uses.Seen(ctx, pc, client) // counted per admission
		if err != nil {
			return gate.Claims{}, false, err
		}
		if shared {
			if err := c.revoke(ctx, pc.Queue, pc.Subject); err != nil {
				return gate.Claims{}, false, err
			}
			return gate.Claims{}, false, gate.ErrUsedElsewhere
		}
	}
	return gate.Claims{Queue: pc.Queue, Subject: pc.Subject, ID: pc.ID, Expires: pc.Expires}, true, nil
}

// CheckOffline checks a pass with this replica's keys alone, without
// Redis: for the gate while Redis is away (gate.FailClosed).
func (c *checker) CheckOffline(token string) (gate.Claims, bool) {
	pc, err := c.cache.Offline(token)
	if err != nil {
		return gate.Claims{}, false
	}
	return gate.Claims{Queue: pc.Queue, Subject: pc.Subject, ID: pc.ID, Expires: pc.Expires}, true
}

// pingingChecker is the checker that the gate can also ask whether Redis
// answers (gate.Pinger).
type pingingChecker struct {
	*checker
	ping func(ctx context.Context) error
}

func (c pingingChecker) Ping(ctx context.Context) error { return busy(c.ping(ctx)) }

// busy marks go-redis's pool timeout as gate.ErrBusy: every connection
// was in use, which says this process is busy, not that Redis is away.
func busy(err error) error {
	if errors.Is(err, redis.ErrPoolTimeout) {
		return fmt.Errorf("%w: %w", gate.ErrBusy, err)
	}
	return err
}

// whyRevoked tells a pass revoked as shared (gate.ErrUsedElsewhere) from
// one whose admission ended otherwise (nil): a refusal's one Redis read,
// so the holder can be told.
func (c *checker) whyRevoked(ctx context.Context, token string) error {
	pc, err := c.verifier.Verify(token)
	if err != nil {
		return nil
	}
	shared, err := c.uses.Shared(ctx, pc)
	if err != nil || !shared {
		return nil // revoked either way; the reason is only a courtesy
	}
	return gate.ErrUsedElsewhere
}
