package main

import (
	"context"
	"net/http"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/command"
	"github.com/waitroom/waitroom/internal/gate/failopen"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/infra/redisconn"
	"github.com/waitroom/waitroom/internal/trust/passledger"
	"github.com/waitroom/waitroom/internal/web/outage"
)

// newGate builds the gate in front of the site: the pass check with its
// fail mode and its ledger of pass uses, and, in gate mode, the proxy to
// the upstream (nil otherwise). ctx bounds the gate's own work. soldOut is
// the page those without a pass get while their room's sale is closed.
func (a *app) newGate(ctx context.Context, soldOut gate.SoldOut) (*gate.Gate, http.Handler, error) {
	cfg := a.cfg
	uses, err := passledger.New(a.rdb, cfg.PassMaxClients, cfg.RequestTimeout)
	if err != nil {
		return nil, nil, err
	}
	// What the gate let through unchecked while Redis was away
	// (WAITROOM_GATE_FAIL=open), written to Redis once it is back.
	if a.failOpens, err = failopen.New(a.rdb, cfg.RequestTimeout, a.obs.failedOpen); err != nil {
		return nil, nil, err
	}
	a.workers = append(a.workers, loop(func(ctx context.Context) { a.failOpens.Run(ctx, a.log) }))
	// The gate's ping has a connection of its own: a flood that takes
	// the requests' pool must not look like Redis away.
	pinger := redisconn.NewPinger(a.redisOpts)
	a.closers = append(a.closers, pinger.Close)
	auditLog, err := audit.New(a.rdb)
	if err != nil {
		return nil, nil, err
	}
	// The order page's commands, from its answers and through the API.
	if a.commands, err = command.New(command.Options{Store: a.store, Passes: a.trust.passes.Verifier, Audit: auditLog,
		Count: a.obs.command, Log: a.log}); err != nil {
		return nil, nil, err
	}
	g, err := proxy.NewGate(ctx, proxy.GateOptions{
		Queue:          cfg.GateQueue,
		Routes:         cfg.GateRoutes,
		Passes:         a.trust.passes,
		Admissions:     a.store,
		Bypass:         cfg.GateBypass,
		BypassCIDRs:    cfg.GateBypassCIDRs,
		InsecureCookie: !cfg.CookieSecure,
		Uses:           uses,
		Revoke:         a.revoke,
		Fail:           gate.FailMode(cfg.GateFail),
		Ping:           pinger.Ping,
		Unavailable:    outage.Handler(outage.AtGate), // the styled page, in the visitor's language
		SoldOut:        soldOut,
		OnFailOpen:     a.failOpens.Passed,
		Logger:         a.log,
		Commands:       a.commands,
	})
	if err != nil {
		return nil, nil, err
	}
	a.logRoutes(g)
	upstream, err := a.newUpstream()
	return g, upstream, err
}

// revoke ends the admission of a shared pass's member, as the operator's
// removal would: its holder is told it was removed.
func (a *app) revoke(ctx context.Context, q, member string) error {
	_, err := queue.NewInspector(a.store).Remove(ctx, q, member)
	return err
}

// logRoutes names the gate's routes once. Without a catch-all, a path no
// route covers, or a host no route names, passes without a pass.
func (a *app) logRoutes(g *gate.Gate) {
	if len(a.cfg.GateRoutes) == 0 {
		return
	}
	routes := make([]string, 0, len(a.cfg.GateRoutes))
	for _, r := range g.Routes() {
		routes = append(routes, r.String()+"="+r.Queue)
	}
	a.log.Info("gate routes", "routes", routes, "catch_all", a.cfg.GateQueue)
}

// newUpstream is the proxy to the site in gate mode; nil without an
// upstream.
func (a *app) newUpstream() (http.Handler, error) {
	cfg := a.cfg
	if cfg.Upstream == nil {
		return nil, nil
	}
	upstream, err := proxy.NewHandler(proxy.Options{Upstream: cfg.Upstream, Timeout: cfg.UpstreamTimeout, Log: a.log,
		Observe: a.adapter.Observe, Limits: cfg.GateLimits, OnCut: a.obs.proxyCut})
	if err != nil {
		return nil, err
	}
	a.log.Info("gate mode", "upstream", cfg.Upstream.Redacted(), "queue", cfg.GateQueue, "routes", len(cfg.GateRoutes), "bypass", cfg.GateBypass, "bypass_cidrs", len(cfg.GateBypassCIDRs), "fail", cfg.GateFail)
	return upstream, nil
}
