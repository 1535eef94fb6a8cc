// Package adminapi is the admin API of waitroom: its guard (credentials,
// lockout, roles) and audit log, the queues as the back office sees them,
// settings, sale days, history, defences, API tokens and the sign-in of
// people through the company's identity provider.
//
// Its handlers are exported for internal/web/httpapi, whose routes.go
// mounts them with the public API's. admin.go is the guard and the audit
// log; adminview.go, history.go and defences.go the reads (queue.Inspector);
// settings.go and saleday.go the changes; tokens.go and signin.go the
// credentials. Errors are answered by internal/web/httpkit.
package adminapi

import (
	"io/fs"
	"log/slog"
	"net/http"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/backoffice/adminsession"
	"github.com/waitroom/waitroom/internal/backoffice/apitoken"
	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/backoffice/lockout"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/failopen"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/hygiene/safeurl"
	"github.com/waitroom/waitroom/internal/ops/autorate"
	"github.com/waitroom/waitroom/internal/ops/forecast"
	"github.com/waitroom/waitroom/internal/trust/invite"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// Options are what the admin API needs; Store, Responder and Static are
// required.
type Options struct {
	Store *queue.Store
	// Responder answers errors and logs (shared with the public API).
	Responder *httpkit.Responder
	// Static holds the back office's page, admin.html.
	Static fs.FS
	// Routes are the gate's routes, each queue's shown in its view (nil:
	// none).
	Routes func() []gate.Route
	// CookieSecure marks the back office's cookies Secure (__Host-); off
	// only for local development over plain http.
	CookieSecure bool
	// AdminToken is the break-glass bearer token (WAITROOM_ADMIN_TOKEN);
	// with neither it nor SignIn the admin API is disabled.
	AdminToken string
	// APITokens are the tokens for scripts (nil: kept in Redis under a
	// key of this process's own, good on one replica).
	APITokens *apitoken.Tokens
	// Sessions are the sign-ins of people (nil: kept in Redis with the
	// default lifetimes).
	Sessions *adminsession.Sessions
	// SignIn signs people in through the company's OpenID provider
	// (/admin/login, /admin/callback); nil: not offered.
	SignIn *adminsession.SignIn
	// ClientIP finds a request's client address for the lockout and the
	// audit log; nil: the peer's address (no trusted proxies).
	ClientIP *clientip.Resolver
	// Redis keeps the lockout of failed attempts and the audit log.
	// Without it an enabled admin API answers 503.
	Redis Redis
	// Lockout is the policy of the lockout of failed attempts; the zero
	// policy: lockout.DefaultPolicy.
	Lockout lockout.Policy
	// Audit is the audit log of the changes (nil: kept in Redis).
	Audit *audit.Log
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
	// while Redis was away, which the queue view shows; nil: none.
	FailOpens *failopen.Recorder
	// Defences answers GET .../defences (paid.Viewer.View); nil: the
	// queue's human_check and the price's defaults, nothing paid.
	Defences DefencesFunc
	// Adapt stores what the site pushes of its health (POST .../origin);
	// nil: that endpoint answers 404.
	Adapt *autorate.Runner
	// Codes digests the invitation codes an operator makes or uploads
	// (POST .../codes); nil: that endpoint answers 404.
	Codes *invite.Codes
}

// API serves the admin API. Its handlers and middleware are mounted by
// internal/web/httpapi's routes.
type API struct {
	store         *queue.Store
	inspector     *queue.Inspector // the store's operator's side
	kit           *httpkit.Responder
	static        fs.FS
	routes        func() []gate.Route // nil: none
	clientIP      *clientip.Resolver
	cookieSecure  bool
	adminEnabled  bool
	admin         adminGuard      // lockout and audit log (admin.go)
	forecasts     *forecast.Guard // per-credential limit and a second's cache (saleday.go)
	webhookChecks webhookChecks   // Options.WebhookInsecureHTTP and NoWebhookSecret
	probePolicy   safeurl.Policy
	failOpens     *failopen.Recorder // nil: none
	defencesView  DefencesFunc       // GET .../defences
	adapt         *autorate.Runner   // nil: none
	codes         *invite.Codes      // nil: none (codes.go)
}

// New returns the admin API of o.
func New(o Options) *API {
	s := &API{
		store:         o.Store,
		inspector:     queue.NewInspector(o.Store),
		kit:           o.Responder,
		static:        o.Static,
		routes:        o.Routes,
		clientIP:      o.ClientIP,
		cookieSecure:  o.CookieSecure,
		adminEnabled:  o.AdminToken != "" || o.SignIn != nil,
		admin:         newAdminGuard(o),
		webhookChecks: webhookChecks{insecureHTTP: o.WebhookInsecureHTTP, noSecret: o.NoWebhookSecret},
		probePolicy:   o.ProbePolicy,
		failOpens:     o.FailOpens,
		defencesView:  o.Defences,
		adapt:         o.Adapt,
		codes:         o.Codes,
	}
	if s.clientIP == nil {
		s.clientIP, _ = clientip.New(nil) // trusts nobody: cannot fail
	}
	if s.defencesView == nil {
		s.defencesView = storeDefences(s.inspector)
	}
	s.forecasts = forecast.NewGuard(forecast.Forecaster{Store: s.inspector}.Forecast, nil)
	return s
}

// fail answers err (httpkit.Responder.Fail).
func (s *API) fail(w http.ResponseWriter, r *http.Request, err error) { s.kit.Fail(w, r, err) }

// Page serves the back office's page (GET /admin), which signs people in
// too.
func (s *API) Page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, s.static, "admin.html")
}

// logger is r's logger (httpkit.Responder.Logger).
func (s *API) logger(r *http.Request) *slog.Logger { return s.kit.Logger(r) }
