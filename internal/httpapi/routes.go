package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// routes is the whole HTTP surface at a glance.
func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.RequestID, s.logRequests, s.recoverPanics, securityHeaders, middleware.GetHead)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, errNotFound)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, errMethodNotAllowed)
	})

	r.Get("/healthz", s.healthz)
	r.Get("/.well-known/jwks.json", s.jwks)
	r.Get("/api/v1/verify", s.verify)
	r.Get("/readyz", s.readyz)

	// Pages.
	r.Get("/", s.home)
	r.Get("/q/{queue}", s.waitingPage)
	r.Get("/admin", s.adminPage)
	r.Handle("/static/*", http.StripPrefix("/static/", http.FileServerFS(s.static)))

	// The public API is routed flat, not in a sub-router: chi's mounting
	// cost 3-4 % of the server CPU of each enter and status (paired runs),
	// and the group has no middleware of its own.
	const api = "/api/v1/queues/{queue}"
	r.Get(api, s.queueInfo)
	r.Get(api+"/", s.queueInfo)
	r.Post(api+"/enter", s.enter)
	r.Get(api+"/status", s.status)
	r.Delete(api+"/place", s.leavePlace)
	r.Delete(api+"/users/{user_id}", s.leaveUser) // insecure mode only

	r.Route("/admin/v1", func(r chi.Router) {
		r.Use(s.requireAdmin)
		r.Get("/queues", s.adminQueues)
		r.Get("/queues/{queue}", s.adminQueue)
		r.Put("/queues/{queue}/refill-size", s.setRefillSize)
		r.Get("/queues/{queue}/history", s.history)
		r.Delete("/queues/{queue}/users/{user_id}", s.removeUser) // every admin call is logged at info
	})
	return r
}
