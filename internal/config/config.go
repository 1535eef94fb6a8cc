// Package config loads the service's settings from the environment once,
// at start-up. Nothing else in the service reads environment variables.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/clientip"
	"github.com/waitroom/waitroom/internal/crossorigin"
	"github.com/waitroom/waitroom/internal/place"
	"github.com/waitroom/waitroom/internal/proxy"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/internal/reqcheck"
	"github.com/waitroom/waitroom/internal/safeurl"
	"github.com/waitroom/waitroom/internal/webhook"
)

// Config is the whole service configuration.
type Config struct {
	Addr           string         // WAITROOM_ADDR
	RedisURL       string         // WAITROOM_REDIS_URL: one node, Sentinel or Cluster (redisconn)
	Queues         []string       // WAITROOM_QUEUES
	Defaults       queue.Settings // WAITROOM_REFILL_SIZE, _REFILL_INTERVAL, _SESSION_TTL, _SESSION_SLIDING, _SESSION_MAX, _MAX_ACTIVE, _ABANDON_AFTER
	AdminToken     string         // WAITROOM_ADMIN_TOKEN; empty disables the admin API
	TargetURL      string         // WAITROOM_TARGET_URL; where admitted users go
	RequestTimeout time.Duration  // WAITROOM_REQUEST_TIMEOUT: bound on each wait for Redis (queue.NewStore)
	LogLevel       slog.Level     // WAITROOM_LOG_LEVEL
	// RedisWaitReplicas makes each enter batch wait, after its script,
	// until that many replicas hold its writes (WAITROOM_REDIS_WAIT_REPLICAS;
	// 0: off), at most RedisWaitTimeout (WAITROOM_REDIS_WAIT_TIMEOUT).
	RedisWaitReplicas int
	RedisWaitTimeout  time.Duration
	// DebugAddr, when set, serves net/http/pprof there (WAITROOM_DEBUG_ADDR);
	// keep it on a private interface.
	DebugAddr string
	// MetricsAddr serves Prometheus metrics at /metrics, on a listener of
	// their own (WAITROOM_METRICS_ADDR, default DefaultMetricsAddr); empty
	// (the variable set to "" or "off"): no metrics, nothing is counted.
	MetricsAddr string

	// Secret keys place credentials (WAITROOM_SECRET); empty: the first
	// replica generates one and keeps it in Redis (secrets package).
	Secret []byte
	// JoinSecret verifies sites' join tokens (WAITROOM_JOIN_SECRET); empty
	// refuses join tokens.
	JoinSecret []byte
	// SigningKeyFile holds the entry pass keys as PEM
	// (WAITROOM_SIGNING_KEY_FILE); empty: the first replica generates one
	// and keeps it in Redis.
	SigningKeyFile string
	// Issuer is the entry passes' iss (WAITROOM_ISSUER).
	Issuer string
	// PublicURL is where the public reaches this service, the origin the
	// hand-overs' QR links start with (WAITROOM_PUBLIC_URL; default
	// WAITROOM_ISSUER when that is such an origin; "": no QR codes).
	// Never a request's Host, which the client chooses (issue 26.6).
	PublicURL string
	// CookieSecure marks cookies Secure (WAITROOM_COOKIE_SECURE); only
	// local development over plain http turns it off.
	CookieSecure bool
	// InsecureUserIDs lets callers name places by a plain user_id
	// (WAITROOM_INSECURE_USER_IDS): anyone who knows an id owns its place.
	// For load tests only, never in production.
	InsecureUserIDs bool

	// Upstream turns on gate mode (WAITROOM_UPSTREAM): the order page
	// that every request not for waitroom itself is proxied to.
	Upstream *url.URL
	// UpstreamTimeout bounds the wait for the upstream's response headers
	// (WAITROOM_UPSTREAM_TIMEOUT).
	UpstreamTimeout time.Duration
	// GateQueue is the queue whose passes open the gate
	// (WAITROOM_GATE_QUEUE; default the first queue). With GateRoutes, it
	// is the room of the paths no route covers, only when set ("": those
	// pass without a pass).
	GateQueue string
	// GateRoutes send the site's paths to several rooms
	// (WAITROOM_GATE_ROUTES, "[host]/path/prefix=queue,..."; gate.Route),
	// each to a queue of Queues.
	GateRoutes []gate.Route
	// GateBypass are path prefixes the gate lets through without a pass
	// (WAITROOM_GATE_BYPASS), each a clean path.
	GateBypass []string
	// GateBypassCIDRs are the clients the gate lets through without a pass
	// (WAITROOM_GATE_BYPASS_CIDRS): the site's monitoring, its office,
	// judged on the address ClientIP gives.
	GateBypassCIDRs clientip.Ranges
	// GateFail is what the gate does while Redis cannot be reached
	// (WAITROOM_GATE_FAIL): closed (default), open or strict, the names
	// of gate.FailMode.
	GateFail string
	// GateLimits bound what one client holds of the reverse proxy (issue
	// 26, item 8): WAITROOM_GATE_BODY_TIMEOUT, _BODY_MIN_RATE,
	// _MAX_PER_PASS, _MAX_PER_CLIENT (proxy.Limits).
	GateLimits proxy.Limits
	// PassMaxClients is how many client addresses (IPv6: /64s) one entry
	// pass may be used from at the gate before it is cancelled as shared
	// (WAITROOM_PASS_MAX_CLIENTS, default 3; 0 turns the check off).
	PassMaxClients int
	// ClientIP believes X-Forwarded-For from the proxies listed in
	// WAITROOM_TRUSTED_PROXIES (CIDRs); none: the peer is the client.
	ClientIP *clientip.Resolver
	// Origins lets the origins in WAITROOM_CORS_ORIGINS call the public
	// API from their pages; none: only waitroom's own pages.
	Origins *crossorigin.Policy

	// ProbePolicy is what origin_probe_url may reach: loopback and
	// private targets only with WAITROOM_ORIGIN_PROBE_ALLOW_PRIVATE=true,
	// link-local never (safeurl; issue 26, item 13).
	ProbePolicy safeurl.Policy

	// MaxConns caps the connections open at once (WAITROOM_MAX_CONNS);
	// from 80 % of it, idle keep-alive connections are closed.
	MaxConns int
	// MaxHeaderBytes bounds a request's line and headers
	// (WAITROOM_MAX_HEADER_BYTES); larger ones get 431.
	MaxHeaderBytes int
	// IdleTimeout closes a keep-alive connection idle this long
	// (WAITROOM_IDLE_TIMEOUT). The default, 75 s like nginx's, stays above
	// the idle timeouts of the usual proxies in front (60 s), which must
	// close first lest they reuse a connection being closed (a 502).
	IdleTimeout time.Duration

	// WAITROOM_WEBHOOK_URL, _SECRET, _INSECURE_HTTP: the site's events
	// (internal/webhook). With a secret, every replica delivers the
	// queues' outboxes; the URL is the default of every queue (a queue's
	// webhook_url overrides it) and needs the secret.
	WebhookURL          string
	WebhookSecret       []byte
	WebhookInsecureHTTP bool

	// WAITROOM_PAGES_DIR: the operator's own waiting page (internal/pages):
	// waiting.html, queues/{queue}/waiting.html and the files served under
	// /_waitroom/site/. "": the project's page.
	PagesDir string
}

// Bounds of the connection settings.
const (
	MaxMaxConns       = 1_000_000
	MinMaxHeaderBytes = 1 << 10
	MaxMaxHeaderBytes = 1 << 20
	MaxIdleTimeout    = 10 * time.Minute
)

// Bounds of the replica WAIT. Its timeout stays well under the Redis
// client's 1 s read timeout (RedisOptions), which also bounds the
// pipeline that carries the WAIT.
const (
	MaxRedisWaitReplicas = 16
	MaxRedisWaitTimeout  = 500 * time.Millisecond
)

// MinAdminTokenBytes is the shortest WAITROOM_ADMIN_TOKEN accepted: 32
// bytes, like the other secrets (place.MinSecretBytes). The lockout slows
// guessing down; it is the token's length that makes guessing hopeless.
const MinAdminTokenBytes = 32

// DefaultMetricsAddr is where metrics are served unless
// WAITROOM_METRICS_ADDR says otherwise.
const DefaultMetricsAddr = ":9090"

// metricsAddr reads WAITROOM_METRICS_ADDR: unset, the default; set to ""
// or "off", no metrics.
func metricsAddr(lookup func(string) (string, bool)) string {
	v, set := lookup("WAITROOM_METRICS_ADDR")
	switch v = strings.TrimSpace(v); {
	case !set:
		return DefaultMetricsAddr
	case v == "off":
		return ""
	}
	return v
}

// Map is a lookup for Load over the variables in m (tests, embedding).
func Map(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// MinRefillInterval keeps the scheduler sane: ticks are checked ten times
// per interval.
const MinRefillInterval = 50 * time.Millisecond

// Load reads the configuration through lookup (os.LookupEnv, or Map) and
// validates it. An empty value means the default, except where a variable
// set to "" means off (WAITROOM_METRICS_ADDR).
func Load(lookup func(string) (string, bool)) (Config, error) {
	getenv := func(key string) string {
		v, _ := lookup(key)
		return v
	}
	get := func(key, def string) string {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			return v
		}
		return def
	}
	var errs []error
	duration := func(key, def string) time.Duration {
		d, err := time.ParseDuration(get(key, def))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
		return d
	}

	boolean := func(key string, def bool) bool {
		v := get(key, strconv.FormatBool(def))
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: want true or false, got %q", key, v))
		}
		return b
	}

	c := Config{
		Addr:           get("WAITROOM_ADDR", ":8080"),
		RedisURL:       get("WAITROOM_REDIS_URL", "redis://localhost:6379/0"),
		AdminToken:     getenv("WAITROOM_ADMIN_TOKEN"),
		TargetURL:      get("WAITROOM_TARGET_URL", ""),
		DebugAddr:      get("WAITROOM_DEBUG_ADDR", ""),
		MetricsAddr:    metricsAddr(lookup),
		RequestTimeout: duration("WAITROOM_REQUEST_TIMEOUT", "2s"),
		Defaults: queue.Settings{
			RefillInterval: duration("WAITROOM_REFILL_INTERVAL", "5s"),
			SessionTTL:     duration("WAITROOM_SESSION_TTL", "10m"),
			AbandonAfter:   duration("WAITROOM_ABANDON_AFTER", "2m"),
		},
	}

	size, err := strconv.Atoi(get("WAITROOM_REFILL_SIZE", "10"))
	if err != nil {
		errs = append(errs, fmt.Errorf("WAITROOM_REFILL_SIZE: %w", err))
	}
	c.Defaults.RefillSize = size
	// Sliding sessions: each pass check renews the admission, up to a
	// maximum; off, an admission lasts WAITROOM_SESSION_TTL from its start.
	sessionMax := duration("WAITROOM_SESSION_MAX", "30m")
	if boolean("WAITROOM_SESSION_SLIDING", false) {
		c.Defaults.SessionMax = sessionMax // at least the TTL: queue.ValidateSettings
	}
	maxActive, err := strconv.Atoi(get("WAITROOM_MAX_ACTIVE", "0"))
	if err != nil {
		errs = append(errs, fmt.Errorf("WAITROOM_MAX_ACTIVE: %w", err))
	}
	c.Defaults.MaxActive = maxActive
	// Rate limits per client address and per place, shared by the
	// replicas (README, "Defences"): "rate,burst" (calls a second, calls at
	// once), or 0 for none.
	limit := func(key, def string) queue.Limit {
		v := get(key, def)
		if v == "0" {
			return queue.Limit{}
		}
		rate, burst, ok := strings.Cut(v, ",")
		r, err1 := strconv.ParseFloat(strings.TrimSpace(rate), 64)
		b, err2 := strconv.Atoi(strings.TrimSpace(burst))
		if !ok || err1 != nil || err2 != nil || r <= 0 || b < 1 {
			errs = append(errs, fmt.Errorf("%s: want \"rate,burst\" (e.g. \"5,300\") or 0, got %q", key, v))
		}
		return queue.Limit{Rate: r, Burst: b}
	}
	c.Defaults.Limits = queue.Limits{
		EnterPerClient:  limit("WAITROOM_LIMIT_ENTER_PER_CLIENT", "5,300"),
		EnterPerPlace:   limit("WAITROOM_LIMIT_ENTER_PER_PLACE", "1,5"),
		StatusPerClient: limit("WAITROOM_LIMIT_STATUS_PER_CLIENT", "200,2000"),
		StatusPerPlace:  limit("WAITROOM_LIMIT_STATUS_PER_PLACE", "5,20"),
		// The client's wider networks (issue 26.2): its IPv4 /24 or IPv6
		// /56, four addresses' worth, and its IPv6 /48, ten.
		EnterPerNetwork: limit("WAITROOM_LIMIT_ENTER_PER_NETWORK", "20,1200"),
		EnterPerSite:    limit("WAITROOM_LIMIT_ENTER_PER_SITE", "50,3000"),
	}
	c.Defaults.Price = price(get, func(err error) { errs = append(errs, err) })
	if err := queue.ValidateSettings(c.Defaults); err != nil {
		errs = append(errs, err)
	}
	if c.Defaults.RefillInterval < MinRefillInterval {
		errs = append(errs, fmt.Errorf("WAITROOM_REFILL_INTERVAL: must be at least %s", MinRefillInterval))
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, errors.New("WAITROOM_REQUEST_TIMEOUT: must be positive"))
	}

	for _, name := range strings.Split(get("WAITROOM_QUEUES", "default"), ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if err := queue.ValidateQueueName(name); err != nil {
			errs = append(errs, fmt.Errorf("WAITROOM_QUEUES: %w", err))
		}
		c.Queues = append(c.Queues, name)
	}
	if len(c.Queues) == 0 {
		errs = append(errs, errors.New("WAITROOM_QUEUES: no queue named"))
	}

	if c.TargetURL != "" {
		u, err := url.Parse(c.TargetURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, errors.New("WAITROOM_TARGET_URL: must be an absolute http(s) URL"))
		}
	}
	c.Secret = []byte(getenv("WAITROOM_SECRET"))
	if len(c.Secret) > 0 && len(c.Secret) < place.MinSecretBytes {
		errs = append(errs, fmt.Errorf("WAITROOM_SECRET: must be at least %d bytes", place.MinSecretBytes))
	}
	c.JoinSecret = []byte(getenv("WAITROOM_JOIN_SECRET"))
	if len(c.JoinSecret) > 0 && len(c.JoinSecret) < place.MinSecretBytes {
		errs = append(errs, fmt.Errorf("WAITROOM_JOIN_SECRET: must be at least %d bytes", place.MinSecretBytes))
	}
	if n := len(c.AdminToken); n > 0 && n < MinAdminTokenBytes {
		errs = append(errs, fmt.Errorf("WAITROOM_ADMIN_TOKEN: must be at least %d bytes, got %d (e.g. openssl rand -hex 32, or scripts/up.sh token)", MinAdminTokenBytes, n))
	}
	c.SigningKeyFile = get("WAITROOM_SIGNING_KEY_FILE", "")
	c.Issuer = get("WAITROOM_ISSUER", "waitroom")
	c.PublicURL = publicURL(get("WAITROOM_PUBLIC_URL", ""), c.Issuer, &errs)
	c.CookieSecure = boolean("WAITROOM_COOKIE_SECURE", true)
	c.InsecureUserIDs = boolean("WAITROOM_INSECURE_USER_IDS", false)

	if v := get("WAITROOM_UPSTREAM", ""); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, errors.New("WAITROOM_UPSTREAM: must be an absolute http(s) URL"))
		}
		c.Upstream = u
	}
	c.UpstreamTimeout = duration("WAITROOM_UPSTREAM_TIMEOUT", "30s")
	if c.UpstreamTimeout <= 0 {
		errs = append(errs, errors.New("WAITROOM_UPSTREAM_TIMEOUT: must be positive"))
	}
	if c.GateRoutes, err = gate.ParseRoutes(getenv("WAITROOM_GATE_ROUTES")); err != nil {
		errs = append(errs, fmt.Errorf("WAITROOM_GATE_ROUTES: %w", err))
	}
	for _, r := range c.GateRoutes {
		if !slices.Contains(c.Queues, r.Queue) {
			errs = append(errs, fmt.Errorf("WAITROOM_GATE_ROUTES: route %q: queue %q is not in WAITROOM_QUEUES", r.String()+"="+r.Queue, r.Queue))
		}
	}
	if len(c.Queues) > 0 {
		// Without routes the gate queue guards the whole site; with them,
		// only a queue named here does, for the paths no route covers.
		def := c.Queues[0]
		if len(c.GateRoutes) > 0 {
			def = ""
		}
		c.GateQueue = get("WAITROOM_GATE_QUEUE", def)
		if c.GateQueue != "" && !slices.Contains(c.Queues, c.GateQueue) {
			errs = append(errs, fmt.Errorf("WAITROOM_GATE_QUEUE: %q is not in WAITROOM_QUEUES", c.GateQueue))
		}
		for _, r := range c.GateRoutes {
			if c.GateQueue != "" && r.Host == "" && strings.TrimSuffix(r.Prefix, "/") == "" && r.Queue != c.GateQueue {
				errs = append(errs, fmt.Errorf("WAITROOM_GATE_QUEUE: %q would be the room of every path no route covers, which the route %q already is", c.GateQueue, r.String()+"="+r.Queue))
			}
		}
	}
	for _, p := range strings.Split(get("WAITROOM_GATE_BYPASS", ""), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !strings.HasPrefix(p, "/") || !reqcheck.IsCanonical(p) {
			errs = append(errs, fmt.Errorf("WAITROOM_GATE_BYPASS: %q must be a clean path starting with / (no dot segments, // or escapes)", p))
		}
		c.GateBypass = append(c.GateBypass, p)
	}

	switch c.GateFail = get("WAITROOM_GATE_FAIL", "closed"); c.GateFail {
	case "closed", "open", "strict":
	default:
		errs = append(errs, fmt.Errorf("WAITROOM_GATE_FAIL: want closed, open or strict, got %q", c.GateFail))
	}

	// Both parsers skip empty entries and trim the others.
	if c.Origins, err = crossorigin.New(strings.Split(get("WAITROOM_CORS_ORIGINS", ""), ",")); err != nil {
		errs = append(errs, fmt.Errorf("WAITROOM_CORS_ORIGINS: %w", err))
	}
	if c.ClientIP, err = clientip.New(strings.Split(get("WAITROOM_TRUSTED_PROXIES", ""), ",")); err != nil {
		errs = append(errs, fmt.Errorf("WAITROOM_TRUSTED_PROXIES: %w", err))
	}
	if c.GateBypassCIDRs, err = clientip.ParseRanges(strings.Split(get("WAITROOM_GATE_BYPASS_CIDRS", ""), ",")); err != nil {
		errs = append(errs, fmt.Errorf("WAITROOM_GATE_BYPASS_CIDRS: %w", err))
	}

	integer := func(key, def string, lo, hi int) int {
		v := get(key, def)
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			errs = append(errs, fmt.Errorf("%s: want an integer from %d to %d, got %q", key, lo, hi, v))
		}
		return n
	}
	c.PassMaxClients = integer("WAITROOM_PASS_MAX_CLIENTS", "3", 0, 1000)
	// The order page's health driving the rate (issue 21, internal/autorate):
	// the settings a queue is seeded with, off unless asked; each queue's
	// own are changed live (PATCH /admin/v1/queues/{queue}, back office).
	c.Defaults.Adapt = queue.Adapt{
		Enabled:   boolean("WAITROOM_ADAPT_ENABLED", false),
		TargetP95: duration("WAITROOM_ORIGIN_TARGET_P95", "0s"),
		MinRefill: integer("WAITROOM_MIN_REFILL_SIZE", "0", 0, queue.MaxRefillSize),
		ProbeURL:  get("WAITROOM_ORIGIN_PROBE_URL", ""),
	}
	if v := get("WAITROOM_ORIGIN_MAX_ERROR_RATE", "0"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || !(r >= 0 && r <= 1) {
			errs = append(errs, fmt.Errorf("WAITROOM_ORIGIN_MAX_ERROR_RATE: want a number from 0 to 1, got %q", v))
		}
		c.Defaults.Adapt.MaxErrorRate = r
	}
	if d := c.Defaults.Adapt.TargetP95; d < 0 || d > queue.MaxOriginTargetP95 {
		errs = append(errs, fmt.Errorf("WAITROOM_ORIGIN_TARGET_P95: must be 0 (off) to %s", queue.MaxOriginTargetP95))
	}
	if p := c.Defaults.Adapt.ProbeURL; p != "" && queue.CheckProbeURL(p) != nil {
		errs = append(errs, errors.New("WAITROOM_ORIGIN_PROBE_URL: must be an absolute http(s) URL without credentials"))
	}
	allowPrivate := boolean("WAITROOM_ORIGIN_PROBE_ALLOW_PRIVATE", false)
	c.ProbePolicy = safeurl.Policy{AllowLoopback: allowPrivate, AllowPrivate: allowPrivate}
	if p := c.Defaults.Adapt.ProbeURL; p != "" && queue.CheckProbeURL(p) == nil {
		if err := c.ProbePolicy.CheckURL(p); err != nil {
			errs = append(errs, fmt.Errorf("WAITROOM_ORIGIN_PROBE_URL: invalid_probe_url: %w (loopback and private targets need WAITROOM_ORIGIN_PROBE_ALLOW_PRIVATE=true)", err))
		}
	}
	c.GateLimits = proxy.Limits{
		BodyGrace:   duration("WAITROOM_GATE_BODY_TIMEOUT", proxy.DefaultBodyGrace.String()),
		BodyMinRate: integer("WAITROOM_GATE_BODY_MIN_RATE", strconv.Itoa(proxy.DefaultBodyMinRate), 1, proxy.MaxBodyMinRate),
		PerPass:     integer("WAITROOM_GATE_MAX_PER_PASS", strconv.Itoa(proxy.DefaultPerPass), 1, proxy.MaxInFlight),
		PerClient:   integer("WAITROOM_GATE_MAX_PER_CLIENT", strconv.Itoa(proxy.DefaultPerClient), 1, proxy.MaxInFlight),
	}
	if g := c.GateLimits.BodyGrace; g < time.Millisecond || g > proxy.MaxBodyGrace {
		errs = append(errs, fmt.Errorf("WAITROOM_GATE_BODY_TIMEOUT: want from 1ms to %s", proxy.MaxBodyGrace))
	}
	c.MaxConns = integer("WAITROOM_MAX_CONNS", "10000", 1, MaxMaxConns)
	c.MaxHeaderBytes = integer("WAITROOM_MAX_HEADER_BYTES", "8192", MinMaxHeaderBytes, MaxMaxHeaderBytes)
	c.IdleTimeout = duration("WAITROOM_IDLE_TIMEOUT", "75s")
	if c.IdleTimeout <= 0 || c.IdleTimeout > MaxIdleTimeout {
		errs = append(errs, fmt.Errorf("WAITROOM_IDLE_TIMEOUT: must be positive and at most %s", MaxIdleTimeout))
	}

	c.PagesDir = get("WAITROOM_PAGES_DIR", "")

	c.WebhookURL = get("WAITROOM_WEBHOOK_URL", "")
	c.WebhookSecret = []byte(getenv("WAITROOM_WEBHOOK_SECRET"))
	c.WebhookInsecureHTTP = boolean("WAITROOM_WEBHOOK_INSECURE_HTTP", false)
	if c.WebhookURL != "" {
		if err := webhook.CheckURL(c.WebhookURL, c.WebhookInsecureHTTP); err != nil {
			errs = append(errs, fmt.Errorf("WAITROOM_WEBHOOK_URL: %w", err))
		}
		if len(c.WebhookSecret) == 0 {
			errs = append(errs, errors.New("WAITROOM_WEBHOOK_SECRET: required with WAITROOM_WEBHOOK_URL (e.g. openssl rand -hex 32)"))
		}
	}
	if n := len(c.WebhookSecret); n > 0 && n < webhook.MinSecretBytes {
		errs = append(errs, fmt.Errorf("WAITROOM_WEBHOOK_SECRET: must be at least %d bytes, got %d", webhook.MinSecretBytes, n))
	}

	if err := c.LogLevel.UnmarshalText([]byte(get("WAITROOM_LOG_LEVEL", "info"))); err != nil {
		errs = append(errs, fmt.Errorf("WAITROOM_LOG_LEVEL: %w", err))
	}
	if _, err := c.Redis(); err != nil {
		errs = append(errs, err)
	}
	c.RedisWaitReplicas = integer("WAITROOM_REDIS_WAIT_REPLICAS", "0", 0, MaxRedisWaitReplicas)
	c.RedisWaitTimeout = duration("WAITROOM_REDIS_WAIT_TIMEOUT", "100ms")
	// Below the request timeout only matters when there is a WAIT: a short
	// WAITROOM_REQUEST_TIMEOUT alone must not fail on the WAIT's default.
	if c.RedisWaitTimeout < time.Millisecond || c.RedisWaitTimeout > MaxRedisWaitTimeout ||
		(c.RedisWaitReplicas > 0 && c.RedisWaitTimeout >= c.RequestTimeout) {
		errs = append(errs, fmt.Errorf("WAITROOM_REDIS_WAIT_TIMEOUT: want from 1ms to %s, and less than WAITROOM_REQUEST_TIMEOUT", MaxRedisWaitTimeout))
	}
	return c, errors.Join(errs...)
}

// publicURL reads WAITROOM_PUBLIC_URL (raw): an http(s) origin, without
// a trailing slash; unset, the issuer if it is one, else "".
func publicURL(raw, issuer string, errs *[]error) string {
	origin := func(v string) (string, bool) {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(v, " \t\r\n") {
			return "", false
		}
		return u.Scheme + "://" + u.Host, true
	}
	if raw == "" {
		o, _ := origin(issuer)
		return o
	}
	o, ok := origin(raw)
	if !ok {
		*errs = append(*errs, errors.New("WAITROOM_PUBLIC_URL: want the origin the public reaches this service at, scheme://host[:port] (e.g. https://waitroom.example)"))
	}
	return o
}

// Redis turns WAITROOM_REDIS_URL into client options (redisconn.New
// makes the client) with bounded timeouts, so a dead or stalled Redis
// fails a request quickly instead of hanging it. Every store call ends by
// RequestTimeout too (queue.NewStore), whatever the client does.
func (c Config) Redis() (*redis.UniversalOptions, error) {
	opts, err := redisconn.Parse(c.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("WAITROOM_REDIS_URL: %w", err)
	}
	opts.DialTimeout = time.Second
	opts.ReadTimeout = time.Second
	opts.WriteTimeout = time.Second
	opts.PoolTimeout = time.Second
	opts.ContextTimeoutEnabled = true
	// One dial per attempt, not go-redis's five: a primary that died
	// without closing its connections (a crash, a lost machine) leaves
	// dials hanging until DialTimeout, and five in a row held an enter
	// batch for 5 s after its callers had their 503, delaying recovery
	// after a failover (internal/failover).
	opts.DialerRetries = 1
	// A script is sent at most once: retrying after a network error could
	// run enter twice. Clients retry at the HTTP level instead. A cluster
	// client retries within its redirect budget too, so it gets none: a
	// MOVED reply (a slot that moved, a failover) fails that one call with
	// a 503 and makes the client re-read the slot map for the next.
	opts.MaxRetries = -1
	opts.MaxRedirects = -1
	return opts, nil
}

// RedisOptions is Redis for a single node, as a *redis.Options: for tests
// that dial one Redis their own way with the service's timeouts.
func (c Config) RedisOptions() (*redis.Options, error) {
	opts, err := c.Redis()
	if err != nil {
		return nil, err
	}
	if kind := redisconn.KindOf(opts); kind != redisconn.Single {
		return nil, fmt.Errorf("WAITROOM_REDIS_URL: a %s URL, not a single node", kind)
	}
	return opts.Simple(), nil
}

// price reads the price of a place (issue 26.2, queue.Price):
// WAITROOM_POW_NETWORK_BITS, the proof of work (leading zero bits) the
// next place of a network holding one already costs, rising by
// log2(held²) with the places it holds ("off" or 0: no price), and
// WAITROOM_POW_CALM_ARRIVALS, the queue's arrivals a second above which
// every price rises by a bit per doubling (0: never).
func price(get func(key, def string) string, fail func(error)) queue.Price {
	var p queue.Price
	v := get("WAITROOM_POW_NETWORK_BITS", "13")
	if v != "off" {
		b, err := strconv.Atoi(v)
		if err != nil || b < 0 || b > queue.MaxChallengeDifficulty {
			fail(fmt.Errorf("WAITROOM_POW_NETWORK_BITS: want 0…%d or off, got %q", queue.MaxChallengeDifficulty, v))
		}
		p.Bits = b
	}
	v = get("WAITROOM_POW_CALM_ARRIVALS", "100")
	calm, err := strconv.ParseFloat(v, 64)
	if err != nil || !(calm >= 0 && calm <= 1e9) { // NaN and infinities fail too
		fail(fmt.Errorf("WAITROOM_POW_CALM_ARRIVALS: want arrivals a second ≥ 0, got %q", v))
	}
	p.CalmArrivals = calm
	return p
}
