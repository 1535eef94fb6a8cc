package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/hygiene/crossorigin"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
	"github.com/waitroom/waitroom/internal/hygiene/safeurl"
	"github.com/waitroom/waitroom/internal/ops/webhook"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/trust/place"
)

// The sections of Load, each over one reader that collects the faults.

// reader reads variables through lookup and collects every fault.
type reader struct {
	lookup func(string) (string, bool)
	errs   []error
}

func (r *reader) failf(format string, a ...any) { r.errs = append(r.errs, fmt.Errorf(format, a...)) }

// raw is the variable as set ("" when unset).
func (r *reader) raw(key string) string {
	v, _ := r.lookup(key)
	return v
}

// str is the variable trimmed, or def when empty.
func (r *reader) str(key, def string) string {
	if v := strings.TrimSpace(r.raw(key)); v != "" {
		return v
	}
	return def
}

func (r *reader) duration(key, def string) time.Duration {
	d, err := time.ParseDuration(r.str(key, def))
	if err != nil {
		r.failf("%s: %w", key, err)
	}
	return d
}

func (r *reader) boolean(key string, def bool) bool {
	v := r.str(key, strconv.FormatBool(def))
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.failf("%s: want true or false, got %q", key, v)
	}
	return b
}

// integer is a whole number in [lo, hi].
func (r *reader) integer(key, def string, lo, hi int) int {
	v := r.str(key, def)
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		r.failf("%s: want an integer from %d to %d, got %q", key, lo, hi, v)
	}
	return n
}

// list is the variable's comma-separated entries, trimmed, empty ones
// left out.
func (r *reader) list(key, def string) []string {
	var l []string
	for _, v := range strings.Split(r.str(key, def), ",") {
		if v = strings.TrimSpace(v); v != "" {
			l = append(l, v)
		}
	}
	return l
}

// httpURL is an absolute http(s) URL, or nil when the variable is empty.
func (r *reader) httpURL(key string) *url.URL {
	v := r.str(key, "")
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.failf("%s: must be an absolute http(s) URL", key)
	}
	return u
}

// loadServer reads the listeners, the request bounds and the logs.
func (c *Config) loadServer(r *reader) {
	c.Addr = r.str("WAITROOM_ADDR", ":8080")
	c.DebugAddr = r.str("WAITROOM_DEBUG_ADDR", "")
	// Unset, the default; set to "" or "off", no metrics.
	v, set := r.lookup("WAITROOM_METRICS_ADDR")
	switch v = strings.TrimSpace(v); {
	case !set:
		c.MetricsAddr = DefaultMetricsAddr
	case v != "off":
		c.MetricsAddr = v
	}
	if c.RequestTimeout = r.duration("WAITROOM_REQUEST_TIMEOUT", "2s"); c.RequestTimeout <= 0 {
		r.failf("WAITROOM_REQUEST_TIMEOUT: must be positive")
	}
	c.TargetURL = r.str("WAITROOM_TARGET_URL", "")
	r.httpURL("WAITROOM_TARGET_URL")
	c.MaxConns = r.integer("WAITROOM_MAX_CONNS", "10000", 1, MaxMaxConns)
	c.MaxHeaderBytes = r.integer("WAITROOM_MAX_HEADER_BYTES", "8192", MinMaxHeaderBytes, MaxMaxHeaderBytes)
	if c.IdleTimeout = r.duration("WAITROOM_IDLE_TIMEOUT", "75s"); c.IdleTimeout <= 0 || c.IdleTimeout > MaxIdleTimeout {
		r.failf("WAITROOM_IDLE_TIMEOUT: must be positive and at most %s", MaxIdleTimeout)
	}
	c.PagesDir = r.str("WAITROOM_PAGES_DIR", "")
	if err := c.LogLevel.UnmarshalText([]byte(r.str("WAITROOM_LOG_LEVEL", "info"))); err != nil {
		r.failf("WAITROOM_LOG_LEVEL: %w", err)
	}
}

// loadQueues reads the queues and the settings they are seeded with: the
// rows of queue.Catalog the environment gives (queueSetting), then what
// no row says (sliding sessions, rate limits, the price of a place).
func (c *Config) loadQueues(r *reader) {
	for _, name := range r.list("WAITROOM_QUEUES", "default") {
		if err := queue.ValidateQueueName(name); err != nil {
			r.failf("WAITROOM_QUEUES: %w", err)
		}
		c.Queues = append(c.Queues, name)
	}
	if len(c.Queues) == 0 {
		r.failf("WAITROOM_QUEUES: no queue named")
	}
	inRange := true
	for _, st := range queue.Catalog {
		if st.Env != "" {
			inRange = queueSetting(r, st, &c.Defaults) && inRange
		}
	}
	// Sliding sessions: each pass check renews the admission, up to a
	// maximum; off, an admission lasts WAITROOM_SESSION_TTL from its start.
	sessionMax := r.duration("WAITROOM_SESSION_MAX", "30m")
	if r.boolean("WAITROOM_SESSION_SLIDING", false) {
		c.Defaults.SessionMax = sessionMax // at least the TTL: queue.ValidateSettings
	}
	c.Defaults.Limits = limits(r)
	c.Defaults.Price = price(r)
	// The rows are checked one by one above; this checks the rest.
	if err := queue.ValidateSettings(c.Defaults); inRange && err != nil {
		r.errs = append(r.errs, err)
	}
	if c.Defaults.RefillInterval < MinRefillInterval {
		r.failf("WAITROOM_REFILL_INTERVAL: must be at least %s", MinRefillInterval)
	}
	allowPrivate := r.boolean("WAITROOM_ORIGIN_PROBE_ALLOW_PRIVATE", false)
	c.ProbePolicy = safeurl.Policy{AllowLoopback: allowPrivate, AllowPrivate: allowPrivate}
	if p := c.Defaults.Adapt.ProbeURL; p != "" && queue.CheckProbeURL(p) == nil {
		if err := c.ProbePolicy.CheckURL(p); err != nil {
			r.failf("WAITROOM_ORIGIN_PROBE_URL: invalid_probe_url: %w (loopback and private targets need WAITROOM_ORIGIN_PROBE_ALLOW_PRIVATE=true)", err)
		}
	}
}

// queueSetting reads the variable of a row of queue.Catalog into d, as
// its Kind reads, and checks it; false when out of range.
func queueSetting(r *reader, st queue.Setting, d *queue.Settings) bool {
	var v any
	switch st.Kind {
	case queue.KindInt:
		n, err := strconv.Atoi(r.str(st.Env, st.Default))
		if err != nil {
			r.failf("%s: %w", st.Env, err)
			return false
		}
		v = n
	case queue.KindMillis:
		v = r.duration(st.Env, st.Default)
	case queue.KindBool:
		v = r.boolean(st.Env, st.Default == "true")
	case queue.KindRate:
		f, err := strconv.ParseFloat(r.str(st.Env, st.Default), 64)
		if err != nil {
			f = -1 // reported as out of range
		}
		v = f
	case queue.KindLanes:
		ls, err := queue.ParseLanes(r.str(st.Env, st.Default))
		if err != nil {
			r.failf("%s: %v", st.Env, err)
			return false
		}
		v = ls
	default:
		v = r.str(st.Env, st.Default)
	}
	st.SetIn(d, v)
	var fe *queue.FieldError
	if err := st.Check(v); errors.As(err, &fe) {
		if st.Kind == queue.KindMillis {
			r.failf("%s: want a duration from %s%s", st.Env, time.Duration(st.Min)*time.Millisecond, upTo(st.Max))
		} else {
			r.failf("%s: %s %v", st.Env, fe.Field, fe.Err)
		}
		return false
	}
	return true
}

// upTo is a duration's bound in ms, as an error names it.
func upTo(maxMS int64) string {
	if maxMS == queue.Unbounded {
		return ""
	}
	return " to " + (time.Duration(maxMS) * time.Millisecond).String()
}

// limits reads the rate limits per client address and per place, shared
// by the replicas (docs/ARCHITECTURE.md, "Defences: bots, floods and
// other sites"): "rate,burst" (calls a second, calls at once), or 0 for
// none.
func limits(r *reader) queue.Limits {
	limit := func(key, def string) queue.Limit {
		v := r.str(key, def)
		if v == "0" {
			return queue.Limit{}
		}
		rate, burst, ok := strings.Cut(v, ",")
		n, err1 := strconv.ParseFloat(strings.TrimSpace(rate), 64)
		b, err2 := strconv.Atoi(strings.TrimSpace(burst))
		if !ok || err1 != nil || err2 != nil || n <= 0 || b < 1 {
			r.failf("%s: want \"rate,burst\" (e.g. \"5,300\") or 0, got %q", key, v)
		}
		return queue.Limit{Rate: n, Burst: b}
	}
	return queue.Limits{
		EnterPerClient:  limit("WAITROOM_LIMIT_ENTER_PER_CLIENT", "5,300"),
		EnterPerPlace:   limit("WAITROOM_LIMIT_ENTER_PER_PLACE", "1,5"),
		StatusPerClient: limit("WAITROOM_LIMIT_STATUS_PER_CLIENT", "200,2000"),
		StatusPerPlace:  limit("WAITROOM_LIMIT_STATUS_PER_PLACE", "5,20"),
		// The client's wider networks: its IPv4 /24 or IPv6
		// /56, four addresses' worth, and its IPv6 /48, ten.
		EnterPerNetwork: limit("WAITROOM_LIMIT_ENTER_PER_NETWORK", "20,1200"),
		EnterPerSite:    limit("WAITROOM_LIMIT_ENTER_PER_SITE", "50,3000"),
		// A network asking for many parked places at once brings back two
		// an interval, so the people behind them move back by two at most.
		HeldReturnPerTick: r.integer("WAITROOM_HELD_RETURN_PER_TICK", "2", 0, 1_000_000),
	}
}

// price reads the price of a place (queue.Price):
// WAITROOM_POW_NETWORK_BITS, the proof of work (leading zero bits) the
// next place of a network holding one already costs, rising by
// log2(held²) with the places it holds ("off" or 0: no price), and
// WAITROOM_POW_CALM_ARRIVALS, the queue's arrivals a second above which
// every price rises by a bit per doubling (0: never).
func price(r *reader) queue.Price {
	p := queue.Price{MaxBits: r.integer("WAITROOM_POW_MAX_BITS", strconv.Itoa(queue.DefaultMaxBits), 1, queue.MaxChallengeDifficulty)}
	if v := r.str("WAITROOM_POW_NETWORK_BITS", "13"); v != "off" {
		b, err := strconv.Atoi(v)
		if err != nil || b < 0 || b > queue.MaxChallengeDifficulty {
			r.failf("WAITROOM_POW_NETWORK_BITS: want 0…%d or off, got %q", queue.MaxChallengeDifficulty, v)
		}
		p.Bits = b
	}
	v := r.str("WAITROOM_POW_CALM_ARRIVALS", "100")
	calm, err := strconv.ParseFloat(v, 64)
	if err != nil || !(calm >= 0 && calm <= 1e9) { // NaN and infinities fail too
		r.failf("WAITROOM_POW_CALM_ARRIVALS: want arrivals a second ≥ 0, got %q", v)
	}
	p.CalmArrivals = calm
	return p
}

// loadTrust reads the secrets, the passes' issuer, the cookies and whom
// the service believes: browsers' origins and proxies.
func (c *Config) loadTrust(r *reader) {
	secret := func(key string, minBytes int) []byte {
		b := []byte(r.raw(key))
		if len(b) > 0 && len(b) < minBytes {
			r.failf("%s: must be at least %d bytes", key, minBytes)
		}
		return b
	}
	c.Secret = secret("WAITROOM_SECRET", place.MinSecretBytes)
	c.JoinSecret = secret("WAITROOM_JOIN_SECRET", place.MinSecretBytes)
	c.AdminToken = r.raw("WAITROOM_ADMIN_TOKEN")
	if n := len(c.AdminToken); n > 0 && n < MinAdminTokenBytes {
		r.failf("WAITROOM_ADMIN_TOKEN: must be at least %d bytes, got %d (e.g. openssl rand -hex 32, or scripts/up.sh token)", MinAdminTokenBytes, n)
	}
	c.SigningKeyFile = r.str("WAITROOM_SIGNING_KEY_FILE", "")
	c.Issuer = r.str("WAITROOM_ISSUER", "waitroom")
	c.PublicURL = publicURL(r, c.Issuer)
	c.CookieSecure = r.boolean("WAITROOM_COOKIE_SECURE", true)
	c.InsecureUserIDs = r.boolean("WAITROOM_INSECURE_USER_IDS", false)
	// Both parsers skip empty entries and trim the others.
	var err error
	if c.Origins, err = crossorigin.New(r.list("WAITROOM_CORS_ORIGINS", "")); err != nil {
		r.failf("WAITROOM_CORS_ORIGINS: %w", err)
	}
	if c.ClientIP, err = clientip.New(r.list("WAITROOM_TRUSTED_PROXIES", "")); err != nil {
		r.failf("WAITROOM_TRUSTED_PROXIES: %w", err)
	}
}

// loadDefences reads what the defences judge a client by besides its
// address: the operator's networks file, and the human check's provider
// with the hosts its tokens may name (the public URL's, and each allowed
// origin's: a token made on another site's page is refused).
func (c *Config) loadDefences(r *reader) {
	c.NetworksFile = r.str("WAITROOM_NETWORKS_FILE", "")
	opts, err := humancheck.FromEnv(func(k string) string { return r.str(k, "") })
	if err != nil {
		r.failf("%w", err)
		return
	}
	if opts.Provider == humancheck.Off {
		c.HumanCheck = humancheck.Options{Provider: humancheck.Off}
		return
	}
	for _, o := range append([]string{c.PublicURL}, r.list("WAITROOM_CORS_ORIGINS", "")...) {
		if u, err := url.Parse(o); err == nil && u.Hostname() != "" {
			opts.Hosts = append(opts.Hosts, u.Hostname())
		}
	}
	if err := opts.WithDefaults().Validate(); err != nil {
		r.failf("%w (the hosts come from WAITROOM_PUBLIC_URL and WAITROOM_CORS_ORIGINS)", err)
	}
	c.HumanCheck = opts
}

// publicURL reads WAITROOM_PUBLIC_URL: an http(s) origin, without a
// trailing slash; unset, the issuer if it is one, else "".
func publicURL(r *reader, issuer string) string {
	origin := func(v string) (string, bool) {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(v, " \t\r\n") {
			return "", false
		}
		return u.Scheme + "://" + u.Host, true
	}
	raw := r.str("WAITROOM_PUBLIC_URL", "")
	if raw == "" {
		o, _ := origin(issuer)
		return o
	}
	o, ok := origin(raw)
	if !ok {
		r.failf("WAITROOM_PUBLIC_URL: want the origin the public reaches this service at, scheme://host[:port] (e.g. https://waitroom.example)")
	}
	return o
}

// loadGate reads gate mode: the upstream, its routes to the queues, what
// passes without a pass, and what one client may hold of the proxy.
func (c *Config) loadGate(r *reader) {
	c.Upstream = r.httpURL("WAITROOM_UPSTREAM")
	if c.UpstreamTimeout = r.duration("WAITROOM_UPSTREAM_TIMEOUT", "30s"); c.UpstreamTimeout <= 0 {
		r.failf("WAITROOM_UPSTREAM_TIMEOUT: must be positive")
	}
	c.gateRooms(r)
	for _, p := range r.list("WAITROOM_GATE_BYPASS", "") {
		if !strings.HasPrefix(p, "/") || !reqcheck.IsCanonical(p) {
			r.failf("WAITROOM_GATE_BYPASS: %q must be a clean path starting with / (no dot segments, // or escapes)", p)
		}
		c.GateBypass = append(c.GateBypass, p)
	}
	var err error
	if c.GateBypassCIDRs, err = clientip.ParseRanges(r.list("WAITROOM_GATE_BYPASS_CIDRS", "")); err != nil {
		r.failf("WAITROOM_GATE_BYPASS_CIDRS: %w", err)
	}
	switch c.GateFail = r.str("WAITROOM_GATE_FAIL", "closed"); c.GateFail {
	case "closed", "open", "strict":
	default:
		r.failf("WAITROOM_GATE_FAIL: want closed, open or strict, got %q", c.GateFail)
	}
	c.PassMaxClients = r.integer("WAITROOM_PASS_MAX_CLIENTS", "3", 0, 1000)
	c.GateLimits = proxy.Limits{
		BodyGrace:   r.duration("WAITROOM_GATE_BODY_TIMEOUT", proxy.DefaultBodyGrace.String()),
		BodyMinRate: r.integer("WAITROOM_GATE_BODY_MIN_RATE", strconv.Itoa(proxy.DefaultBodyMinRate), 1, proxy.MaxBodyMinRate),
		PerPass:     r.integer("WAITROOM_GATE_MAX_PER_PASS", strconv.Itoa(proxy.DefaultPerPass), 1, proxy.MaxInFlight),
		PerClient:   r.integer("WAITROOM_GATE_MAX_PER_CLIENT", strconv.Itoa(proxy.DefaultPerClient), 1, proxy.MaxInFlight),
	}
	if g := c.GateLimits.BodyGrace; g < time.Millisecond || g > proxy.MaxBodyGrace {
		r.failf("WAITROOM_GATE_BODY_TIMEOUT: want from 1ms to %s", proxy.MaxBodyGrace)
	}
}

// gateRooms reads the gate's routes and its queue, each a queue of
// Queues.
func (c *Config) gateRooms(r *reader) {
	var err error
	if c.GateRoutes, err = gate.ParseRoutes(r.raw("WAITROOM_GATE_ROUTES")); err != nil {
		r.failf("WAITROOM_GATE_ROUTES: %w", err)
	}
	for _, rt := range c.GateRoutes {
		if !slices.Contains(c.Queues, rt.Queue) {
			r.failf("WAITROOM_GATE_ROUTES: route %q: queue %q is not in WAITROOM_QUEUES", rt.String()+"="+rt.Queue, rt.Queue)
		}
	}
	if len(c.Queues) == 0 {
		return
	}
	// Without routes the gate queue guards the whole site; with them,
	// only a queue named here does, for the paths no route covers.
	def := c.Queues[0]
	if len(c.GateRoutes) > 0 {
		def = ""
	}
	c.GateQueue = r.str("WAITROOM_GATE_QUEUE", def)
	if c.GateQueue != "" && !slices.Contains(c.Queues, c.GateQueue) {
		r.failf("WAITROOM_GATE_QUEUE: %q is not in WAITROOM_QUEUES", c.GateQueue)
	}
	for _, rt := range c.GateRoutes {
		if c.GateQueue != "" && rt.Host == "" && strings.TrimSuffix(rt.Prefix, "/") == "" && rt.Queue != c.GateQueue {
			r.failf("WAITROOM_GATE_QUEUE: %q would be the room of every path no route covers, which the route %q already is", c.GateQueue, rt.String()+"="+rt.Queue)
		}
	}
}

// loadWebhooks reads where the site's events go (internal/ops/webhook).
func (c *Config) loadWebhooks(r *reader) {
	c.WebhookURL = r.str("WAITROOM_WEBHOOK_URL", "")
	c.WebhookSecret = []byte(r.raw("WAITROOM_WEBHOOK_SECRET"))
	c.WebhookInsecureHTTP = r.boolean("WAITROOM_WEBHOOK_INSECURE_HTTP", false)
	if c.WebhookURL != "" {
		if err := webhook.CheckURL(c.WebhookURL, c.WebhookInsecureHTTP); err != nil {
			r.failf("WAITROOM_WEBHOOK_URL: %w", err)
		}
		if len(c.WebhookSecret) == 0 {
			r.failf("WAITROOM_WEBHOOK_SECRET: required with WAITROOM_WEBHOOK_URL (e.g. openssl rand -hex 32)")
		}
	}
	if n := len(c.WebhookSecret); n > 0 && n < webhook.MinSecretBytes {
		r.failf("WAITROOM_WEBHOOK_SECRET: must be at least %d bytes, got %d", webhook.MinSecretBytes, n)
	}
}

// loadRedis reads where Redis is and the replica WAIT (after
// loadServer: the WAIT stays under the request timeout).
func (c *Config) loadRedis(r *reader) {
	c.RedisURL = r.str("WAITROOM_REDIS_URL", "redis://localhost:6379/0")
	if _, err := c.Redis(); err != nil {
		r.errs = append(r.errs, err)
	}
	c.RedisWaitReplicas = r.integer("WAITROOM_REDIS_WAIT_REPLICAS", "0", 0, MaxRedisWaitReplicas)
	c.RedisWaitTimeout = r.duration("WAITROOM_REDIS_WAIT_TIMEOUT", "100ms")
	// Below the request timeout only matters when there is a WAIT: a short
	// WAITROOM_REQUEST_TIMEOUT alone must not fail on the WAIT's default.
	if c.RedisWaitTimeout < time.Millisecond || c.RedisWaitTimeout > MaxRedisWaitTimeout ||
		(c.RedisWaitReplicas > 0 && c.RedisWaitTimeout >= c.RequestTimeout) {
		r.failf("WAITROOM_REDIS_WAIT_TIMEOUT: want from 1ms to %s, and less than WAITROOM_REQUEST_TIMEOUT", MaxRedisWaitTimeout)
	}
}
