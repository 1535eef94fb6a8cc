// Package httpapi is the HTTP face of waitroom: the public queue API, the
// admin API, the two pages and the health checks.
//
// routes.go shows the whole surface. The handlers are by what they serve:
// public.go the queue API (enter, whose caller internal/web/admission
// resolves; status, leave, done, info), ticket.go the tickets it answers,
// trust.go the place credentials and pass checks, challenge.go the proof
// of work, adminview.go and settings.go the admin API's reads and changes
// (queue.Inspector), admin.go its guard and audit log, pages.go the pages,
// health.go the health checks. errors.go is the one place that turns
// errors into answers; json.go and params.go read requests.
package httpapi

import (
	"crypto/rand"
	"github.com/waitroom/waitroom/internal/ops/autorate"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/backoffice/adminsession"
	"github.com/waitroom/waitroom/internal/backoffice/apitoken"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/failopen"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/hygiene/crossorigin"
	"github.com/waitroom/waitroom/internal/hygiene/loglimit"
	"github.com/waitroom/waitroom/internal/hygiene/netclass"
	"github.com/waitroom/waitroom/internal/hygiene/safeurl"
	"github.com/waitroom/waitroom/internal/ops/forecast"
	"github.com/waitroom/waitroom/internal/trust/challenge"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/admission"
	"github.com/waitroom/waitroom/internal/web/linedoc"
	"github.com/waitroom/waitroom/internal/web/pages"
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
	Redis Redis
	// Metrics counts and times the requests (metrics.Metrics.Middleware);
	// it runs inside chi's router, to read the route pattern. nil: none.
	Metrics func(http.Handler) http.Handler
	// WebhookInsecureHTTP lets an operator set a plain http webhook_url
	// anywhere (WAITROOM_WEBHOOK_INSECURE_HTTP).
	WebhookInsecureHTTP bool
	// NoWebhookSecret: WAITROOM_WEBHOOK_SECRET is not set, so no event is
	// delivered; a webhook_url is then refused (webhooks_disabled).
	NoWebhookSecret bool
	// ProbePolicy is what an origin_probe_url may reach (safeurl; issue
	// 26, item 13): the zero policy refuses loopback and private targets.
	ProbePolicy safeurl.Policy
	// FailOpens is the record of what the gate let through unchecked
	// while Redis was away, which the admin queue view shows; nil: none.
	FailOpens *failopen.Recorder
	// Paid records what visitors paid (challenges asked, places made and
	// the bits their proofs carried, human checks); nil: nothing recorded.
	Paid PaidRecorder
	// Defences answers GET /admin/v1/queues/{queue}/defences: the price's
	// policy in force and Paid's summary (paid.Viewer.View); nil: the
	// queue's human_check and the price's defaults, nothing paid.
	Defences DefencesFunc
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
	// Networks is the operator's table of network classes
	// (WAITROOM_NETWORKS_FILE, reloaded as it changes); nil: every
	// network of the default class.
	Networks *netclass.Watcher
}

// Server serves the HTTP API.
type Server struct {
	store        *queue.Store
	inspector    *queue.Inspector     // the store's operator's side (the admin API)
	admission    *admission.Admission // enter's one way in (public.go)
	human        *humancheck.Checker
	networks     *netclass.Watcher
	places       *place.Credentials
	passes       *pass.Passes
	cookieSecure bool
	// placeCookiePrefix and placeCookieAttrs come before the queue's name
	// and after the value in the place cookie's line.
	placeCookiePrefix, placeCookieAttrs string
	insecureIDs                         bool
	adminEnabled                        bool
	targetURL                           string
	log                                 *slog.Logger
	static                              fs.FS
	pages                               *pages.Pages
	assetTags                           assetTags // the ETag of each file of static
	gate                                *gate.Gate
	handler                             *chi.Mux     // waitroom's own routes
	own                                 http.Handler // handler behind its request context (routed)
	gated                               http.Handler // everything else, through the gate
	proxying                            bool         // gate mode: gated serves every other path
	clientIP                            *clientip.Resolver
	challenges                          *challenge.Challenges
	origins                             *crossorigin.Policy
	admin                               adminGuard      // lockout and audit log of the admin API (admin.go)
	forecasts                           *forecast.Guard // per-credential limit and a second's cache (saleday.go)
	failures                            *loglimit.Keyed // the 5xx lines, one per cause and route a period (errors.go)
	// metrics wraps the routes (Options.Metrics); nil: none.
	metrics func(http.Handler) http.Handler
	// webhookChecks: Options.WebhookInsecureHTTP and NoWebhookSecret
	webhookChecks webhookChecks
	probePolicy   safeurl.Policy     // Options.ProbePolicy
	failOpens     *failopen.Recorder // nil: none
	paid          PaidRecorder       // never nil (defences.go)
	defencesView  DefencesFunc       // GET .../defences
	handoffs      *handoff.Service   // nil: none
	lines         *linedoc.Documents // the queues' public line documents (line.go)
	adapt         *autorate.Runner   // nil: none
	waitingCSP    []string           // the waiting page's CSP with a human check (humancheck.go); nil: the common one
}

// New returns the server with its routes.
func New(o Options) *Server {
	s := &Server{
		store:             o.Store,
		inspector:         queue.NewInspector(o.Store),
		human:             o.Human,
		networks:          o.Networks,
		places:            o.Places,
		passes:            o.Passes,
		cookieSecure:      o.CookieSecure,
		placeCookieAttrs:  placeCookieAttrs(o.CookieSecure),
		placeCookiePrefix: place.CookiePrefix(o.CookieSecure),
		insecureIDs:       o.InsecureUserIDs,
		adminEnabled:      o.AdminToken != "" || o.SignIn != nil,
		targetURL:         o.TargetURL,
		log:               o.Logger,
		static:            o.Static,
		pages:             o.Pages,
		assetTags:         newAssetTags(o.Static),
		gate:              o.Gate,
		// a plain http webhook_url anywhere (webhook.CheckURL)
		webhookChecks: webhookChecks{insecureHTTP: o.WebhookInsecureHTTP, noSecret: o.NoWebhookSecret},
		probePolicy:   o.ProbePolicy,
	}
	if s.pages == nil {
		s.pages = pages.Default()
	}
	s.handoffs = o.Handoffs
	s.initDefences(o)
	s.lines = linedoc.New(o.Store)
	s.proxying = o.Upstream != nil
	s.clientIP = o.ClientIP
	if s.clientIP == nil {
		s.clientIP, _ = clientip.New(nil) // trusts nobody: cannot fail
	}
	s.challenges, s.origins = o.Challenges, o.Origins
	if s.challenges == nil {
		key := make([]byte, 32)
		_, _ = rand.Read(key) // never fails (crypto/rand)
		s.challenges, _ = challenge.New(key)
	}
	if s.origins == nil {
		s.origins, _ = crossorigin.New(nil) // no origins: cannot fail
	}
	s.admission = newAdmission(o, s)
	s.admin = newAdminGuard(o)
	s.failures = loglimit.NewKeyed(failureLogEvery, maxFailureKeys, nil)
	s.forecasts = forecast.NewGuard(forecast.Forecaster{Store: s.inspector}.Forecast, nil)
	s.metrics, s.failOpens, s.adapt = o.Metrics, o.FailOpens, o.Adapt
	if o.Human != nil {
		s.waitingCSP = waitingPageCSP(o.Human.Public())
	}
	s.handler = s.routes()
	s.own = routed(s.handler)
	s.gated = s.gatedRoutes(o.Upstream)
	return s
}

// newAdmission is the enter of o's parts, with s's stand-ins for those o
// leaves out (challenges, paid). An interface holding a nil pointer is not
// nil: a part o leaves out stays out.
func newAdmission(o Options, s *Server) *admission.Admission {
	a := admission.Options{Store: o.Store, Places: o.Places, Challenges: s.challenges, Join: o.Join,
		Paid: s.paid, Networks: o.Networks, InsecureUserIDs: o.InsecureUserIDs}
	if o.Handoffs != nil {
		a.Handoffs = o.Handoffs
	}
	if o.Human != nil {
		a.Human = o.Human
	}
	return admission.New(a)
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
