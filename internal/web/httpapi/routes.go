package httpapi

import (
	"github.com/waitroom/waitroom/internal/web/pages"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
)

// routes is the whole HTTP surface at a glance. Each request gets its id
// first, as it enters the router (routed, in New).
func (s *Server) routes() *chi.Mux {
	r := chi.NewRouter()
	r.Use(s.logRequests)
	if s.metrics != nil { // after the access log, whose response writer it reuses
		r.Use(s.metrics)
	}
	r.Use(s.recoverPanics, securityHeaders, middleware.GetHead, s.origins.CORS)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, errNotFound)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, errMethodNotAllowed)
	})

	r.Get("/healthz", s.healthz)
	r.With(s.withClient).Get("/gate/verify", s.gate.ForwardAuth)
	r.With(s.withClient).HandleFunc("/gate/refused", s.gate.Refused) // any method: the refused request's
	r.Get("/.well-known/jwks.json", s.jwks)
	r.Get("/api/v1/verify", s.verify)
	r.Get("/readyz", s.readyz)
	r.Get("/api/openapi.yaml", s.openAPI) // the contract, api/openapi.yaml

	// Pages. In gate mode "/" and /favicon.ico are the upstream's.
	if !s.proxying {
		r.Get("/", s.home)
		r.Get("/favicon.ico", s.favicon)
	}
	r.Get("/q/{queue}", s.waitingPage)
	r.Get("/admin", s.adminPage)
	// Under a prefix of waitroom's own, so an upstream keeps its /static/.
	// GET (and HEAD) only: the files have no other method.
	r.Get(assets+"*", s.asset)
	// The operator's own files (WAITROOM_PAGES_DIR), for their template.
	r.Get(pages.SitePrefix+"*", s.siteFile)

	// The public API is routed flat, not in a sub-router: chi's mounting
	// cost 3-4 % of the server CPU of each enter and status (paired runs),
	// and the group has no middleware of its own.
	const api = "/api/v1/queues/{queue}"
	r.Get(api, s.queueInfo)
	r.Get(api+"/", s.queueInfo)
	r.Get(api+"/challenge", s.issueChallenge)
	r.Post(api+"/enter", s.enter)
	r.Get(api+"/status", s.status)
	r.Get(api+"/line", s.line) // the line as a public, cacheable document (line.go)
	r.Delete(api+"/place", s.leavePlace)
	r.Post(api+"/handoff", s.createHandoff) // move the place to another device (handoff.go)
	r.Get(api+"/handoff/qr", s.handoffQR)   // its QR code, a PNG
	r.Post(api+"/done", s.done)
	r.Delete(api+"/users/{user_id}", s.leaveUser) // insecure mode only

	// The back office's sign-in through the company's identity provider
	// (signin.go); the admin API takes its session cookie.
	r.Get("/admin/login", s.login)
	r.Get("/admin/callback", s.callback)
	r.Post("/admin/logout", s.logout)

	// The admin API. Every call needs a credential (requireAdmin) and a
	// role (need): viewer reads, operator changes the queues it covers,
	// admin manages everything else.
	viewer, operator, admin := s.need(adminauth.Viewer), s.need(adminauth.Operator), s.need(adminauth.Admin)
	r.Get("/admin/v1/signin-options", s.signInOptions) // what the sign-in page offers: no credential
	r.Route("/admin/v1", func(r chi.Router) {
		// Before routing: a wrong method is judged like any call.
		r.Use(s.requireAdmin)
		r.Get("/me", s.me)                                         // who is signed in, and what they may do
		r.With(viewer).Get("/settings/catalog", s.settingsCatalog) // the settings, as the back office builds its form
		r.With(viewer).Get("/queues", s.adminQueues)               // those the caller may see
		r.With(viewer).Get("/queues/{queue}", s.adminQueue)
		r.With(operator).Patch("/queues/{queue}", s.patchSettings) // webhook_url and origin_probe_url: admin
		r.With(operator).Put("/queues/{queue}/refill-size", s.setRefillSize)
		r.With(viewer).Get("/queues/{queue}/history", s.history)
		r.With(viewer).Get("/queues/{queue}/schedule", s.getSchedule)
		r.With(operator).Put("/queues/{queue}/schedule", s.putSchedule)          // windows the tick applies
		r.With(viewer).Get("/queues/{queue}/forecast", s.getForecast)            // what a refill size would do
		r.With(viewer).Get("/queues/{queue}/audit", s.auditLog)                  // the admin changes, newest first
		r.With(viewer).Get("/queues/{queue}/defences", s.defences)               // the price in force and what visitors paid (defences.go)
		r.With(operator).Post("/queues/{queue}/origin", s.originReport)          // the site's own p95 and error rate (internal/ops/autorate)
		r.With(operator).Delete("/queues/{queue}/users/{user_id}", s.removeUser) // every admin call is logged at info
		r.With(admin).Post("/tokens", s.createToken)                             // API tokens for scripts (tokens.go)
		r.With(admin).Get("/tokens", s.listTokens)
		r.With(admin).Delete("/tokens/{id}", s.revokeToken)
		r.With(admin).Delete("/sessions/{person}", s.endSessions) // end a person's sign-ins
	})
	return r
}

// ownPrefixes are the paths that stay waitroom's in gate mode; every other
// path belongs to the upstream.
var ownPrefixes = []string{"/api/", "/admin/", "/q/", assets, "/.well-known/", "/gate/"}

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
func (s *Server) gatedRoutes(upstream http.Handler) http.Handler {
	next := upstream
	if next == nil {
		next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.fail(w, r, errNotFound) })
	}
	h := s.recoverPanics(s.withClient(s.gate.Handler(next)))
	if s.metrics != nil {
		h = s.metrics(h)
	}
	return requestID(s.logRequests(h))
}

// withClient puts the client's address (behind trusted proxies, the one
// they name) in the request context, where the gate's pass check counts
// the addresses a pass is used from.
// The request's own context from requestID or routed takes the address
// in place, so a gated request is copied once for its id and address,
// not twice: nothing else holds that context yet.
func (s *Server) withClient(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := s.clientIP.Addr(r)
		if c, ok := r.Context().(*idContext); ok {
			c.addr, c.hasAddr = a, true
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(clientip.NewContext(r.Context(), a)))
	})
}
