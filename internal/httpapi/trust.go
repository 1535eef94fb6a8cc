package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/pass"
	"github.com/waitroom/waitroom/internal/place"
	"github.com/waitroom/waitroom/internal/queue"
)

// placeCookieAge is how long a browser keeps its place cookie: a day, so
// a user who closes the browser during a long wait keeps the place.
const placeCookieAge = 24 * 60 * 60

// placeOf returns the member whose place in queue q the request proves:
// the credential in Authorization: Bearer (apps), else in the queue's
// cookie (browsers). errInvalidPlace when there is none or it is not
// valid for q.
func (s *Server) placeOf(r *http.Request, q string) (string, error) {
	token, ok := gate.BearerToken(r)
	if !ok {
		c, err := r.Cookie(place.CookieName(q))
		if err != nil {
			return "", errInvalidPlace
		}
		token = c.Value
	}
	member, err := s.places.Verify(q, token)
	if err != nil {
		return "", errInvalidPlace
	}
	return member, nil
}

// memberOf returns the member a status call asks about: the place the
// caller proves, or in insecure mode a plain ?user_id=.
func (s *Server) memberOf(r *http.Request, q string) (string, error) {
	if r.URL.RawQuery != "" {
		if v := r.URL.Query(); v.Has("user_id") {
			if !s.insecureIDs {
				return "", errUserIDsDisabled
			}
			return v.Get("user_id"), nil
		}
	}
	return s.placeOf(r, q)
}

// placeCookie is the cookie that carries queue q's place credential in
// browsers (maxAge < 0 deletes it). HttpOnly keeps it from page scripts;
// SameSite=Lax from other sites' posts.
func (s *Server) placeCookie(q, token string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     place.CookieName(q),
		Value:    token,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   s.cookieSecure,
		SameSite: http.SameSiteLaxMode,
	}
}

// setPlaceCookie sets the place cookie for a day. Every enter sets one, so
// the line is written directly: the bytes http.SetCookie would write for
// placeCookie (TestSetPlaceCookieMatchesNetHTTP), without its checks and
// allocations. Tokens and queue names need no quoting.
func (s *Server) setPlaceCookie(w http.ResponseWriter, q, token string) {
	h := w.Header()
	h["Set-Cookie"] = append(h["Set-Cookie"], place.CookiePrefix+q+"="+token+s.placeCookieAttrs)
}

// placeCookieAttrs are the attributes setPlaceCookie writes.
func placeCookieAttrs(secure bool) string {
	a := "; Path=/; Max-Age=" + strconv.Itoa(placeCookieAge) + "; HttpOnly"
	if secure {
		a += "; Secure"
	}
	return a + "; SameSite=Lax"
}

type verifyResponse struct {
	Queue   string `json:"queue"`
	Sub     string `json:"sub"`
	Expires int64  `json:"exp"`
}

// verify is the order page's server-to-server check of an entry pass:
// signature, validity and that its admission has not ended.
func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	token, ok := gate.BearerToken(r)
	if !ok {
		s.fail(w, r, errInvalidPass)
		return
	}
	c, err := s.passes.Check(r.Context(), token, s.store)
	if err != nil {
		if !errors.Is(err, pass.ErrInvalid) {
			s.fail(w, r, err) // Redis away: 503, not a verdict on the pass
			return
		}
		s.fail(w, r, errInvalidPass)
		return
	}
	writeJSON(w, http.StatusOK, verifyResponse{Queue: c.Queue, Sub: c.Subject, Expires: c.Expires.Unix()})
}

// jwksMaxAge is how long verifiers may cache the JWKS: a new key must be
// published at least this long before it signs (README, key rotation).
const jwksMaxAge = "300"

func (s *Server) jwks(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age="+jwksMaxAge)
	_, _ = w.Write(s.passes.Keys().JWKS())
}

// done is the order page saying an admitted user is done (it forwards the
// user's pass): the admission ends, so the pass is revoked and the slot
// goes to the next tick. A pass whose admission already ended is done
// already (204 again); a pass that is not valid, or for another queue, is
// refused.
func (s *Server) done(w http.ResponseWriter, r *http.Request) {
	q := chi.URLParam(r, "queue")
	if !s.store.Has(q) {
		s.fail(w, r, queue.ErrUnknownQueue)
		return
	}
	token, ok := gate.BearerToken(r)
	if !ok {
		s.fail(w, r, errInvalidPass)
		return
	}
	c, err := s.passes.Verify(token)
	if err != nil || c.Queue != q {
		s.fail(w, r, errInvalidPass)
		return
	}
	if _, err := s.store.Done(r.Context(), q, c.Subject, c.AdmittedAt); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
