// Package httpapi is the HTTP face of waitroom: it builds the public API
// (internal/web/publicapi) and the admin API
// (internal/web/adminapi) and mounts both, with the gate, in one
// router.
//
// routes.go shows the whole surface. The handlers are by what they serve,
// in the two sides' packages; internal/web/httpkit is the plumbing they
// share: the one place that turns errors into answers, JSON in and out,
// request ids, the access log.
package httpapi

import (
	"io/fs"
	"log/slog"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/backoffice/adminsession"
	"github.com/waitroom/waitroom/internal/backoffice/apitoken"
	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/backoffice/lockout"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/command"
	"github.com/waitroom/waitroom/internal/gate/failopen"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/hygiene/crossorigin"
	"github.com/waitroom/waitroom/internal/hygiene/netclass"
	"github.com/waitroom/waitroom/internal/hygiene/safeurl"
	"github.com/waitroom/waitroom/internal/ops/autorate"
	"github.com/waitroom/waitroom/internal/trust/challenge"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/trust/invite"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/adminapi"
	"github.com/waitroom/waitroom/internal/web/httpkit"
	"github.com/waitroom/waitroom/internal/web/pages"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

// Options are what the server needs; Store, Places, Passes, Logger and
// Static are required.
type Options struct {
	Store *queue.Store
	// Places issues and verifies place credentials.
	Places *place.Credentials
	// Passes issues and checks entry passes and publishes their keys.
	Passes *pass.Passes
	// Join verifies sites' join tokens; nil refuses them.
	Join *place.Join
	// CookieSecure marks the place cookie Secure; off only for local
	// development over plain http.
	CookieSecure bool
	// InsecureUserIDs accepts plain user ids ({"user_id"}, ?user_id=,
	// DELETE .../users/{id}): whoever names an id owns its place. For load
	// tests only.
	InsecureUserIDs bool
	// AdminToken is the break-glass bearer token of the admin API
	// (WAITROOM_ADMIN_TOKEN); with neither it nor SignIn the admin API
	// is disabled.
	AdminToken string
	// APITokens are the admin API's tokens for scripts (nil: kept in
	// Redis under a key of this process's own, good on one replica).
	APITokens *apitoken.Tokens
	// Sessions are the sign-ins of people (nil: kept in Redis with the
	// default lifetimes).
	Sessions *adminsession.Sessions
	// SignIn signs people in through the company's OpenID provider
	// (/admin/login, /admin/callback); nil: not offered.
	SignIn *adminsession.SignIn
	// TargetURL is where admitted users go (the order page); it gets the
	// entry pass as the query parameter wr_pass.
	TargetURL string
	Logger    *slog.Logger
	// Static holds the pages and their assets (web/static).
	Static fs.FS
	// Pages renders the waiting page (the project's template, or the
	// operator's of WAITROOM_PAGES_DIR) and serves the operator's files
	// under /_waitroom/site/; nil: the project's template alone.
	Pages *pages.Pages
	// Gate checks entry passes for the gate queue: /gate/verify (forward
	// auth) and the exchange of ?wr_pass= pass links on paths that are not
	// waitroom's own. Required.
	Gate *gate.Gate
	// Upstream, when set, is the order page behind waitroom (gate mode):
	// every request that is not waitroom's own goes there through Gate.
	Upstream http.Handler
	// ClientIP finds a request's client address for per-client limits;
	// nil: the peer's address (no trusted proxies).
	ClientIP *clientip.Resolver
	// Challenges issues and checks the proof of work a queue may ask for
	// before entering; nil: a key of this process's own (one replica).
	Challenges *challenge.Challenges
	// Origins are the other sites allowed to call the public API (CORS);
	// nil: none.
	Origins *crossorigin.Policy
	// Redis keeps the admin API's lockout of failed attempts and its
	// audit log. Without it an enabled admin API answers 503.
	Redis adminapi.Redis
	// AdminLockout is the admin API's policy against failed attempts; the
	// zero policy: lockout.DefaultPolicy.
	AdminLockout lockout.Policy
	// Audit is the admin API's log of changes (nil: kept in Redis).
	Audit *audit.Log
	// Metrics counts and times the requests (metrics.Metrics.Middleware);
	// it runs inside chi's router, to read the route pattern. nil: none.
	Metrics func(http.Handler) http.Handler
	// WebhookInsecureHTTP lets an operator set a plain http webhook_url
	// anywhere (WAITROOM_WEBHOOK_INSECURE_HTTP).
	WebhookInsecureHTTP bool
	// NoWebhookSecret: WAITROOM_WEBHOOK_SECRET is not set, so no event is
	// delivered; a webhook_url is then refused (webhooks_disabled).
	NoWebhookSecret bool
	// ProbePolicy is what an origin_probe_url may reach (safeurl): the
	// zero policy refuses loopback and private targets.
	ProbePolicy safeurl.Policy
	// FailOpens is the record of what the gate let through unchecked
	// while Redis was away, which the admin queue view shows; nil: none.
	FailOpens *failopen.Recorder
	// Paid records what visitors paid (challenges asked, places made and
	// the bits their proofs carried, human checks); nil: nothing recorded.
	Paid publicapi.PaidRecorder
	// Defences answers GET /admin/v1/queues/{queue}/defences: the price's
	// policy in force and Paid's summary (paid.Viewer.View); nil: the
	// queue's human_check and the price's defaults, nothing paid.
	Defences adminapi.DefencesFunc
	// Handoffs moves places to other devices (POST .../handoff, enter
	// with {"handoff"}); nil: not offered (404, invalid_handoff).
	Handoffs *handoff.Service
	// Adapt is the controller that lets the order page's health drive the
	// rate: it stores what the site pushes (POST .../origin); nil: that
	// endpoint answers 404.
	Adapt *autorate.Runner
	// Human checks a human check's token with its provider (nil: no
	// human check; a human_token is then ignored, and the store never
	// asks for one). The waiting page's Content-Security-Policy allows
	// its widget's script and frame.
	Human *humancheck.Checker
	// Commands carries out the order page's commands (done, extend),
	// through the API and, in gate mode, from its answers'
	// Waitroom-Command (the proxy's own). nil: a runner over Store and
	// Passes that records to Audit (or Redis) and counts nothing.
	Commands *command.Runner
	// Networks is the operator's table of network classes
	// (WAITROOM_NETWORKS_FILE, reloaded as it changes); nil: every
	// network of the default class.
	Networks *netclass.Watcher
	// Codes are the invitation codes for lanes, keyed from the service's
	// secret: the admin API makes them, enters bring them (invite_code).
	// nil: codes are off (every invite_code is refused).
	Codes *invite.Codes
	// CodeGuard locks out those who guess codes; nil: one kept in Redis
	// (Options.Redis) under the default policies.
	CodeGuard *invite.Guard
}

// defaultCommands is the order page's commands of a server built without
// them (tests, mostly): audited where the admin API audits, not counted.
func defaultCommands(o Options) *command.Runner {
	log := o.Audit
	if log == nil && o.Redis != nil {
		log, _ = audit.New(o.Redis)
	}
	c, err := command.New(command.Options{Store: o.Store, Passes: o.Passes.Verifier, Audit: log, Log: o.Logger})
	if err != nil {
		panic(err) // Store, Passes and Logger are required of New's options too
	}
	return c
}

// Server serves waitroom's HTTP: its own routes, and in gate mode every
// other path through the gate.
type Server struct {
	own      http.Handler // the routes behind their request context (httpkit.Routed)
	gated    http.Handler // everything else, through the gate
	proxying bool         // gate mode: gated serves every other path
	mux      *chi.Mux     // the routes, which the contract test walks
}

// New returns the server of both APIs with their routes.
func New(o Options) http.Handler {
	kit := httpkit.NewResponder(o.Logger, o.Human)
	clientIP := o.ClientIP
	if clientIP == nil {
		clientIP, _ = clientip.New(nil) // trusts nobody: cannot fail
	}
	if o.Commands == nil {
		o.Commands = defaultCommands(o)
	}
	if o.Codes != nil && o.CodeGuard == nil && o.Redis != nil {
		o.CodeGuard, _ = invite.NewGuard(o.Redis, lockout.Policy{}, lockout.Policy{}) // the default policies are valid
	}
	pub := publicapi.New(publicapi.Options{
		Commands: o.Commands, Store: o.Store, Responder: kit, Places: o.Places, Passes: o.Passes, Join: o.Join,
		CookieSecure: o.CookieSecure, InsecureUserIDs: o.InsecureUserIDs, TargetURL: o.TargetURL,
		Static: o.Static, Pages: o.Pages, Gate: o.Gate, Proxying: o.Upstream != nil, ClientIP: clientIP,
		Challenges: o.Challenges, Origins: o.Origins, Paid: o.Paid, Handoffs: o.Handoffs, Human: o.Human,
		Networks: o.Networks, Codes: o.Codes, Guard: o.CodeGuard,
	})
	admin := adminapi.New(adminapi.Options{
		Store: o.Store, Responder: kit, Static: o.Static, Routes: o.Gate.Routes, CookieSecure: o.CookieSecure,
		AdminToken: o.AdminToken, APITokens: o.APITokens, Sessions: o.Sessions, SignIn: o.SignIn,
		ClientIP: clientIP, Redis: o.Redis, Lockout: o.AdminLockout, Audit: o.Audit,
		WebhookInsecureHTTP: o.WebhookInsecureHTTP, NoWebhookSecret: o.NoWebhookSecret, ProbePolicy: o.ProbePolicy,
		FailOpens: o.FailOpens, Defences: o.Defences, Adapt: o.Adapt, Codes: o.Codes,
	})
	m := mount{kit: kit, pub: pub, admin: admin, gate: o.Gate, metrics: o.Metrics, withClient: httpkit.WithClient(clientIP),
		proxying: o.Upstream != nil}
	mux := m.routes()
	return &Server{own: httpkit.Routed(mux), gated: m.gatedRoutes(o.Upstream), proxying: m.proxying, mux: mux}
}

// ServeHTTP sends waitroom's own paths to its routes. In gate mode every
// other path goes through the gate to the upstream; otherwise only a pass
// handed over in ?wr_pass= does (a proxy doing forward auth sends those
// here, see deploy/nginx), to be moved into the cookie.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !ownPath(r.URL.Path) && (s.proxying || strings.Contains(r.URL.RawQuery, "wr_pass=")) {
		s.gated.ServeHTTP(w, r)
		return
	}
	s.own.ServeHTTP(w, r)
}
