package httpapi

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/web/adminapi"
	"github.com/waitroom/waitroom/internal/web/agent"
	"github.com/waitroom/waitroom/internal/web/httpkit"
	"github.com/waitroom/waitroom/internal/web/pages"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

// mount is what the routes are made of: the two sides, the gate, and the
// middleware around them.
type mount struct {
	kit        *httpkit.Responder
	pub        *publicapi.API
	admin      *adminapi.API
	gate       *gate.Gate
	metrics    func(http.Handler) http.Handler // nil: none
	withClient func(http.Handler) http.Handler // the client's address in the context
	proxying   bool                            // gate mode: "/" and /favicon.ico are the upstream's
}

// routes is the whole HTTP surface at a glance. Each request gets its id
// first, as it enters the router (httpkit.Routed, in New).
func (m mount) routes() *chi.Mux {
	pub, adm := m.pub, m.admin
	r := chi.NewRouter()
	r.Use(m.kit.LogRequests)
	if m.metrics != nil { // after the access log, whose response writer it reuses
		r.Use(m.metrics)
	}
	r.Use(m.kit.RecoverPanics, httpkit.SecurityHeaders, middleware.GetHead, pub.Origins().CORS)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		m.kit.Fail(w, r, httpkit.ErrNotFound)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		m.kit.Fail(w, r, httpkit.ErrMethodNotAllowed)
	})

	r.Get("/healthz", pub.Healthz)
	r.With(m.withClient).Get("/gate/verify", m.gate.ForwardAuth)
	r.With(m.withClient).HandleFunc("/gate/refused", m.gate.Refused) // any method: the refused request's
	r.Get("/.well-known/jwks.json", pub.JWKS)
	r.Get("/api/v1/verify", pub.Verify)
	r.Get("/readyz", pub.Readyz)
	r.Get("/api/openapi.yaml", pub.OpenAPI) // the contract, api/openapi.yaml

	// Pages. In gate mode "/" and /favicon.ico are the upstream's.
	if !m.proxying {
		r.Get("/", pub.Home)
		r.Get("/favicon.ico", pub.Favicon)
	}
	r.Get("/q/{queue}", pub.WaitingPage)
	r.Get("/q/{queue}/verify", pub.VerifyDrawPage) // the draw's verifier (publicapi's pages.go)
	// The in-page agent that sites' own pages load (internal/web/agent):
	// the module, the classic script, their current versioned addresses.
	ag := agent.Default()
	r.Get(agent.ModulePath, ag.Module)
	r.Get(agent.ClassicPath, ag.Classic)
	r.Get(agent.VersionPath, ag.Version)
	r.Get("/admin", adm.Page)
	// Under a prefix of waitroom's own, so an upstream keeps its /static/.
	// GET (and HEAD) only: the files have no other method.
	r.Get(httpkit.Assets+"*", pub.Asset)
	// The operator's own files (WAITROOM_PAGES_DIR), for their template.
	r.Get(pages.SitePrefix+"*", pub.SiteFile)

	// The public API is routed flat, not in a sub-router: chi's mounting
	// cost 3-4 % of the server CPU of each enter and status (paired runs),
	// and the group has no middleware of its own.
	const api = "/api/v1/queues/{queue}"
	r.Get(api, pub.QueueInfo)
	r.Get(api+"/", pub.QueueInfo)
	r.Get(api+"/challenge", pub.Challenge)
	r.Post(api+"/enter", pub.Enter)
	r.Get(api+"/status", pub.Status)
	r.Get(api+"/line", pub.Line) // the line as a public, cacheable document (publicapi's line.go)
	r.Get(api+"/draw", pub.Draw) // the last draw's list, to check it (publicapi's draw.go)
	r.Delete(api+"/place", pub.LeavePlace)
	r.Post(api+"/handoff", pub.CreateHandoff) // move the place to another device (publicapi's handoff.go)
	r.Get(api+"/handoff/qr", pub.HandoffQR)   // its QR code, a PNG
	r.Post(api+"/done", pub.Done)
	r.Post(api+"/commands", pub.Command)            // the order page's done and extend (publicapi's commands.go)
	r.Delete(api+"/users/{user_id}", pub.LeaveUser) // insecure mode only

	// The back office's sign-in through the company's identity provider
	// (adminapi's signin.go); the admin API takes its session cookie.
	r.Get("/admin/login", adm.Login)
	r.Get("/admin/callback", adm.Callback)
	r.Post("/admin/logout", adm.Logout)

	// The admin API. Every call needs a credential (RequireAdmin) and a
	// role (Need): viewer reads, operator changes the queues it covers,
	// admin manages everything else.
	viewer, operator, admin := adm.Need(adminauth.Viewer), adm.Need(adminauth.Operator), adm.Need(adminauth.Admin)
	r.Get("/admin/v1/signin-options", adm.SignInOptions) // what the sign-in page offers: no credential
	r.Route("/admin/v1", func(r chi.Router) {
		// Before routing: a wrong method is judged like any call.
		r.Use(adm.RequireAdmin)
		r.Get("/me", adm.Me)                                         // who is signed in, and what they may do
		r.With(viewer).Get("/settings/catalog", adm.SettingsCatalog) // the settings, as the back office builds its form
		r.With(viewer).Get("/queues", adm.Queues)                    // those the caller may see
		r.With(viewer).Get("/queues/{queue}", adm.Queue)
		r.With(operator).Patch("/queues/{queue}", adm.PatchSettings) // webhook_url and origin_probe_url: admin
		r.With(operator).Put("/queues/{queue}/refill-size", adm.SetRefillSize)
		r.With(operator).Post("/queues/{queue}/close", adm.CloseSale) // sold out: the line closes with a message (adminapi's sale.go)
		r.With(operator).Post("/queues/{queue}/reopen", adm.ReopenSale)
		r.With(operator).Post("/queues/{queue}/codes", adm.CreateCodes) // invitation codes for a lane (adminapi's codes.go)
		r.With(operator).Get("/queues/{queue}/codes", adm.CodeBatches)
		r.With(operator).Delete("/queues/{queue}/codes/{batch}", adm.RevokeCodes)
		r.With(viewer).Get("/queues/{queue}/history", adm.History)
		r.With(viewer).Get("/queues/{queue}/schedule", adm.Schedule)
		r.With(operator).Put("/queues/{queue}/schedule", adm.PutSchedule)          // windows the tick applies
		r.With(viewer).Get("/queues/{queue}/forecast", adm.Forecast)               // what a refill size would do
		r.With(viewer).Get("/queues/{queue}/audit", adm.AuditLog)                  // the admin changes, newest first
		r.With(viewer).Get("/queues/{queue}/defences", adm.Defences)               // the price in force and what visitors paid (adminapi's defences.go)
		r.With(operator).Post("/queues/{queue}/origin", adm.OriginReport)          // the site's own p95 and error rate (internal/ops/autorate)
		r.With(operator).Delete("/queues/{queue}/users/{user_id}", adm.RemoveUser) // every admin call is logged at info
		r.With(admin).Post("/tokens", adm.CreateToken)                             // API tokens for scripts (adminapi's tokens.go)
		r.With(admin).Get("/tokens", adm.Tokens)
		r.With(admin).Delete("/tokens/{id}", adm.RevokeToken)
		r.With(admin).Delete("/sessions/{person}", adm.EndSessions) // end a person's sign-ins
	})
	return r
}

// ownPrefixes are the paths that stay waitroom's in gate mode; every other
// path belongs to the upstream.
var ownPrefixes = []string{"/api/", "/admin/", "/q/", httpkit.Assets, "/.well-known/", "/gate/", "/agent/"}

// ownPath reports whether path is one of waitroom's own.
func ownPath(path string) bool {
	switch path {
	case "/admin", "/healthz", "/readyz":
		return true
	}
	for _, p := range ownPrefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// gatedRoutes is what serves the paths that are not waitroom's own: the
// gate in front of the upstream, or, without one, in front of a 404 (it
// then only ever answers ?wr_pass= pass links). It logs and recovers like
// the routes, but sets none of waitroom's page headers: the upstream's
// pages keep their own.
func (m mount) gatedRoutes(upstream http.Handler) http.Handler {
	next := upstream
	if next == nil {
		next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.kit.Fail(w, r, httpkit.ErrNotFound) })
	}
	h := m.kit.RecoverPanics(m.withClient(m.gate.Handler(next)))
	if m.metrics != nil {
		h = m.metrics(h)
	}
	return httpkit.RequestID(m.kit.LogRequests(h))
}
