package publicapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// placeCookieAge is how long a browser keeps its place cookie: a day, so
// a user who closes the browser during a long wait keeps the place.
const placeCookieAge = 24 * 60 * 60

// knownPlace is the preamble of a handler that acts on the caller's own
// place: a known queue and a place credential for it. It answers the
// error itself; ok is false then.
func (s *API) knownPlace(w http.ResponseWriter, r *http.Request) (q string, p place.Place, ok bool) {
	if q, ok = s.kit.KnownQueue(w, r, s.store); !ok {
		return "", place.Place{}, false
	}
	p, err := s.placeOf(r, q)
	if err != nil {
		s.fail(w, r, err)
		return "", place.Place{}, false
	}
	return q, p, true
}

// placeOf returns the place in queue q the request proves: the member,
// its credential's arrival number and generation (credentialOf).
func (s *API) placeOf(r *http.Request, q string) (place.Place, error) {
	token, _ := s.credentialOf(r, q)
	p, err := s.places.VerifyPlace(q, token)
	if err != nil {
		return place.Place{}, httpkit.ErrInvalidPlace
	}
	return p, nil
}

// credentialOf returns the place credential for queue q that r carries:
// the Authorization header's bearer token (apps; bearer is true), or else
// the place cookie (browsers). "": none, or the cookie twice, which is
// refused rather than the first taken: one of them was planted.
func (s *API) credentialOf(r *http.Request, q string) (token string, bearer bool) {
	if token, ok := reqcheck.BearerToken(r); ok {
		return token, true
	}
	cs := r.CookiesNamed(place.CookieName(q, s.cookieSecure))
	if len(cs) != 1 {
		return "", false
	}
	return cs[0].Value, false
}

// callerOf returns who a status call asks about: the place the caller
// proves, or in insecure mode a plain ?user_id= (no credential).
func (s *API) callerOf(r *http.Request, q string) (queue.Caller, error) {
	if r.URL.RawQuery != "" {
		if v := r.URL.Query(); v.Has("user_id") {
			if !s.insecureIDs {
				return queue.Caller{}, httpkit.ErrUserIDsDisabled
			}
			return queue.Caller{User: v.Get("user_id"), Client: s.clientKey(r), Proved: true}, nil
		}
	}
	p, err := s.placeOf(r, q)
	if err != nil {
		return queue.Caller{}, err
	}
	// The network (one address of a shared network) is the budget of the
	// held places its callers bring back per tick.
	t, _ := s.networks.Table().Tiers(s.clientIP.Addr(r))
	return queue.Caller{User: p.Member, Client: t.Host, Networks: [2]string{t.Network}, Proved: true, Seq: p.Seq, Credential: true, Gen: p.Gen}, nil
}

// placeCookie is the cookie that carries queue q's place credential in
// browsers (maxAge < 0 deletes it). HttpOnly keeps it from page scripts;
// SameSite=Lax from other sites' posts.
func (s *API) placeCookie(q, token string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     place.CookieName(q, s.cookieSecure),
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
func (s *API) setPlaceCookie(w http.ResponseWriter, q, token string) {
	h := w.Header()
	h["Set-Cookie"] = append(h["Set-Cookie"], s.placeCookiePrefix+q+"="+token+s.placeCookieAttrs)
}

// placeCookieAttrs are the attributes setPlaceCookie writes.
func placeCookieAttrs(secure bool) string {
	a := "; Path=/; Max-Age=" + strconv.Itoa(placeCookieAge) + "; HttpOnly"
	if secure {
		a += "; Secure"
	}
	return a + "; SameSite=Lax"
}

type VerifyResponse struct {
	Queue   string `json:"queue"`
	Sub     string `json:"sub"`
	Expires int64  `json:"exp"`
}

// Verify is the order page's server-to-server check of an entry pass for
// ?queue=: signature, validity, queue and that its admission has not
// ended. The queue is required, so an order page cannot forget to compare
// it and let in the holders of another event's passes.
func (s *API) Verify(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("queue")
	if q == "" {
		s.fail(w, r, errQueueRequired)
		return
	}
	token, ok := reqcheck.BearerToken(r)
	if !ok {
		s.fail(w, r, httpkit.ErrInvalidPass)
		return
	}
	c, err := s.passes.Check(r.Context(), token, s.store)
	if err == nil && c.Queue != q {
		err = pass.ErrInvalid
	}
	if err != nil {
		if !errors.Is(err, pass.ErrInvalid) {
			s.fail(w, r, err) // Redis away: 503, not a verdict on the pass
			return
		}
		s.fail(w, r, httpkit.ErrInvalidPass)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, VerifyResponse{Queue: c.Queue, Sub: c.Subject, Expires: c.Expires.Unix()})
}

// jwksMaxAge is how long verifiers may cache the JWKS: a new key must be
// published at least this long before it signs (README, key rotation).
const jwksMaxAge = "300"

func (s *API) JWKS(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age="+jwksMaxAge)
	_, _ = w.Write(s.passes.Keys().JWKS())
}
