// Package httpapi is the HTTP face of waitroom: the public queue API, the
// admin API, the two pages and the health checks.
package httpapi

import (
	"crypto/sha256"
	"io/fs"
	"log/slog"
	"net/http"

	"github.com/waitroom/waitroom/internal/queue"
)

// Options are what the server needs; every field but AdminToken and
// TargetURL is required.
type Options struct {
	Store *queue.Store
	// AdminToken is the bearer token of the admin API; empty disables it.
	AdminToken string
	// TargetURL is where admitted users go (the order page); it gets the
	// queue and user id as query parameters.
	TargetURL string
	Logger    *slog.Logger
	// Static holds the pages and their assets (web/static).
	Static fs.FS
}

// Server serves the HTTP API.
type Server struct {
	store        *queue.Store
	adminEnabled bool
	adminHash    [sha256.Size]byte
	targetURL    string
	log          *slog.Logger
	static       fs.FS
	handler      http.Handler
}

// New returns the server with its routes.
func New(o Options) *Server {
	s := &Server{
		store:        o.Store,
		adminEnabled: o.AdminToken != "",
		// Comparing hashes keeps the comparison constant-time even in the
		// token's length.
		adminHash: sha256.Sum256([]byte(o.AdminToken)),
		targetURL: o.TargetURL,
		log:       o.Logger,
		static:    o.Static,
	}
	s.handler = s.routes()
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}
