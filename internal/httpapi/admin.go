package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"

	"github.com/waitroom/waitroom/gate"
)

// requireAdmin checks the bearer token in constant time.
func (s *Server) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.adminEnabled {
			s.fail(w, r, errAdminDisabled)
			return
		}
		token, ok := gate.BearerToken(r)
		sum := sha256.Sum256([]byte(token))
		if !ok || subtle.ConstantTimeCompare(sum[:], s.adminHash[:]) != 1 {
			s.fail(w, r, errUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
