// Package config loads the service's settings from the environment once,
// at start-up. Nothing else in the service reads environment variables.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/hygiene/crossorigin"
	"github.com/waitroom/waitroom/internal/hygiene/safeurl"
	"github.com/waitroom/waitroom/internal/infra/redisconn"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
)

// Config is the whole service configuration.
type Config struct {
	Addr           string         // WAITROOM_ADDR
	RedisURL       string         // WAITROOM_REDIS_URL: one node, Sentinel or Cluster (redisconn)
	Queues         []string       // WAITROOM_QUEUES
	Defaults       queue.Settings // WAITROOM_REFILL_SIZE, _REFILL_INTERVAL, _SESSION_TTL, _SESSION_SLIDING, _SESSION_MAX, _MAX_ACTIVE, _ABANDON_AFTER
	AdminToken     string         // WAITROOM_ADMIN_TOKEN, the break-glass credential (also Admin.Token)
	Admin          Admin          // who may sign in to the back office: the token, OIDC, sessions
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
	// Never a request's Host, which the client chooses.
	PublicURL string
	// NetworksFile is the operator's table of network classes
	// (WAITROOM_NETWORKS_FILE, package netclass; "": none, every network
	// of the default class).
	NetworksFile string
	// HumanCheck is the human check's provider (WAITROOM_HUMAN_CHECK and
	// its _SITEKEY, _SECRET, _VERIFY_URL, _SCRIPT_URL; package
	// humancheck), with the hosts a token's hostname may name: the
	// public URL's and the allowed origins'.
	HumanCheck humancheck.Options

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
	// link-local never (safeurl).
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
	// (internal/ops/webhook). With a secret, every replica delivers the
	// queues' outboxes; the URL is the default of every queue (a queue's
	// webhook_url overrides it) and needs the secret.
	WebhookURL          string
	WebhookSecret       []byte
	WebhookInsecureHTTP bool

	// WAITROOM_PAGES_DIR: the operator's own waiting page (internal/web/pages):
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
// client's 1 s read timeout (Redis), which also bounds the
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

// MinRefillInterval keeps the scheduler sane: ticks are checked ten times
// per interval.
const MinRefillInterval = 50 * time.Millisecond

// Load reads the configuration through lookup (os.LookupEnv) and
// validates it, one section at a time (load.go); every fault is reported,
// joined. An empty value means the default, except where a variable set
// to "" means off (WAITROOM_METRICS_ADDR).
func Load(lookup func(string) (string, bool)) (Config, error) {
	r := &reader{lookup: lookup}
	var c Config
	c.loadServer(r)
	c.loadQueues(r)
	c.loadTrust(r)
	c.loadDefences(r)
	c.loadAdmin(r)
	c.loadGate(r)
	c.loadWebhooks(r)
	c.loadRedis(r)
	return c, errors.Join(r.errs...)
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
	// after a failover (internal/testkit/failover).
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
