package adminapi

import (
	"context"
	"errors"
	"html"
	"net/http"
	"strconv"

	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/backoffice/adminsession"
	"github.com/waitroom/waitroom/internal/backoffice/lockout"
	"github.com/waitroom/waitroom/internal/hygiene/crossorigin"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// Signing people in to the back office through the company's OpenID
// provider (adminsession), and out again.

var (
	errNoSignIn       = &httpkit.Error{Status: http.StatusNotFound, Code: "oidc_disabled", Message: "sign-in through an identity provider is not configured (WAITROOM_OIDC_ISSUER)"}
	errSignInState    = &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_state", Message: "this sign-in is unknown, used, expired or was begun in another browser; sign in again"}
	errSignInCode     = &httpkit.Error{Status: http.StatusUnauthorized, Code: "invalid_code", Message: "the identity provider refused the sign-in's code; sign in again"}
	errSignInIDToken  = &httpkit.Error{Status: http.StatusUnauthorized, Code: "invalid_id_token", Message: "the identity provider's answer could not be verified; sign in again"}
	errSignInDenied   = &httpkit.Error{Status: http.StatusUnauthorized, Code: "signin_denied", Message: "the identity provider did not sign you in"}
	errSignInNoRole   = &httpkit.Error{Status: http.StatusForbidden, Code: "no_role", Message: "you are signed in at the identity provider, but none of your groups is given a role in this waiting room; ask an admin to map one of your groups (WAITROOM_OIDC_ROLES)"}
	errSignInProvider = &httpkit.Error{Status: http.StatusServiceUnavailable, Code: "oidc_unavailable", Message: "the identity provider cannot be reached; try again shortly"}
)

// CookieName is the back office session cookie's name: __Host- with Secure (the
// browser then refuses it from plain http, another host or path).
func CookieName(secure bool) string {
	if secure {
		return "__Host-wr_admin"
	}
	return "wr_admin"
}

// signInCookieName holds a sign-in while the person is at the provider.
func signInCookieName(secure bool) string {
	if secure {
		return "__Host-wr_signin"
	}
	return "wr_signin"
}

// adminCookie is r's session cookie's value, or "".
func (s *API) adminCookie(r *http.Request) string {
	c, err := r.Cookie(CookieName(s.cookieSecure))
	if err != nil {
		return ""
	}
	return c.Value
}

// setCookie sets (maxAge > 0) or clears (maxAge < 0) a cookie of the back
// office: HttpOnly, Secure unless local development, on every path.
func (s *API) setCookie(w http.ResponseWriter, name, value string, maxAge int, sameSite http.SameSite) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		Secure: s.cookieSecure, SameSite: sameSite})
}

// SignInOptions tells the sign-in page what it may offer: the provider,
// the token form. Public: it says nothing a visitor could use.
func (s *API) SignInOptions(w http.ResponseWriter, r *http.Request) {
	httpkit.WriteJSON(w, http.StatusOK, struct {
		OIDC  bool `json:"oidc"`
		Token bool `json:"token"`
	}{s.admin.signIn != nil, s.adminEnabled})
}

// Login sends the browser to the provider, with the sign-in sealed in
// its sign-in cookie (SameSite=Lax: the provider's redirect back is a
// top-level navigation from another site, which Strict would strip).
func (s *API) Login(w http.ResponseWriter, r *http.Request) {
	if s.admin.signIn == nil {
		s.fail(w, r, errNoSignIn)
		return
	}
	to, cookie, err := s.admin.signIn.Begin(r.Context())
	if err != nil {
		s.signInFailed(w, r, errSignInProvider, err)
		return
	}
	s.setCookie(w, signInCookieName(s.cookieSecure), cookie, 600, http.SameSiteLaxMode)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to, http.StatusFound)
}

// Callback is where the provider sends the browser back: the sign-in is
// finished and a session started (its cookie SameSite=Strict), or the
// page says why not. A failure only a guesser can make counts against the
// client's address, like a wrong admin token (signInError).
func (s *API) Callback(w http.ResponseWriter, r *http.Request) {
	if s.admin.signIn == nil || s.admin.lockout == nil {
		s.fail(w, r, errNoSignIn)
		return
	}
	s.setCookie(w, signInCookieName(s.cookieSecure), "", -1, http.SameSiteLaxMode) // used or not, it is spent
	client := s.clientIP.Addr(r)
	if d, ok := s.admin.lockedFor(client); ok {
		s.signInFailed(w, r, lockedError(d), nil)
		return
	}
	q := r.URL.Query()
	var cookie string
	if c, err := r.Cookie(signInCookieName(s.cookieSecure)); err == nil {
		cookie = c.Value
	}
	var person adminsession.Person
	var err error
	if q.Get("error") != "" {
		err = errSignInDenied
	} else {
		person, err = s.admin.signIn.Finish(r.Context(), q.Get("state"), q.Get("code"), cookie)
	}
	if err != nil {
		s.signInFailed(w, r, s.signInError(r, err), err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminRedisTimeout)
	defer cancel()
	id, err := s.admin.sessions.Start(ctx, person)
	if err != nil {
		s.signInFailed(w, r, err, err)
		return
	}
	p := adminauth.Principal{Grants: person.Grants}
	s.logger(r).Info("back office sign-in", "person", person.Name, "role", p.Role().String())
	s.setCookie(w, CookieName(s.cookieSecure), id, int(s.admin.sessions.Absolute().Seconds()), http.SameSiteStrictMode)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/admin", http.StatusSeeOther)
}

// signInError is the answer to a failed sign-in, err counted by the
// lockout where only a guesser could have made it: a spent state
// replayed, a code or an ID token the provider's answer did not bear out.
// A missing or foreign sign-in cookie, a state that does not match it, or
// the provider's own refusal are not counted: any page can send a
// browser to /admin/callback, and counting those would let another site
// lock an operator out.
func (s *API) signInError(r *http.Request, err error) error {
	var answer error
	switch {
	case errors.Is(err, adminsession.ErrNoRole):
		return errSignInNoRole // the provider vouched for them: no guess
	case errors.Is(err, adminsession.ErrProvider):
		return errSignInProvider
	case errors.Is(err, adminsession.ErrReplay):
		answer = errSignInState
	case errors.Is(err, adminsession.ErrState):
		return errSignInState
	case errors.Is(err, adminsession.ErrCode):
		answer = errSignInCode
	case errors.Is(err, adminsession.ErrIDToken):
		answer = errSignInIDToken
	case errors.Is(err, errSignInDenied):
		return errSignInDenied
	default:
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminRedisTimeout)
	defer cancel()
	client := s.clientIP.Addr(r)
	if failed := s.adminFailure(ctx, r, client, func() (lockout.Result, error) { return s.admin.lockout.Fail(ctx, client) }); failed != errUnauthorized {
		return failed // locked now (429), or Redis away
	}
	return answer
}

// signInFailed answers a sign-in's failure as a page a person reads, with
// its stable code; cause (nil: none) is logged.
func (s *API) signInFailed(w http.ResponseWriter, r *http.Request, answer, cause error) {
	e := httpkit.Classify(answer)
	if cause != nil {
		s.logger(r).Warn("back office sign-in failed", "code", e.Code, "err", cause)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", httpkit.RetryAfter(e.RetryAfter))
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(e.Status)
	_, _ = w.Write([]byte(`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
		`<title>Sign-in refused · waitroom</title><link rel="stylesheet" href="` + httpkit.Assets + `style.css"></head><body>` +
		`<main class="card login-card"><h1>Sign-in refused</h1><p id="signin-error" data-code="` + html.EscapeString(e.Code) + `">` +
		html.EscapeString(e.Message) + `</p><p class="hint">Code: <code>` + html.EscapeString(e.Code) + `</code> (HTTP ` + strconv.Itoa(e.Status) + `)</p>` +
		`<p><a class="btn btn-primary" href="/admin">Back to the sign-in page</a></p></main></body></html>`))
}

// Logout ends the person's session (its cookie), here and, within a
// second, on every replica. A page of another site cannot post it.
func (s *API) Logout(w http.ResponseWriter, r *http.Request) {
	if !crossorigin.SameOrigin(r) {
		s.fail(w, r, errCrossSiteAdmin)
		return
	}
	id := s.adminCookie(r)
	s.setCookie(w, CookieName(s.cookieSecure), "", -1, http.SameSiteStrictMode)
	if id != "" && s.admin.sessions != nil {
		ctx, cancel := context.WithTimeout(r.Context(), adminRedisTimeout)
		defer cancel()
		if p, ok, err := s.admin.sessions.Find(ctx, id); err != nil {
			s.fail(w, r, err)
			return
		} else if ok {
			if err := s.admin.sessions.End(ctx, p.Actor.Name, id); err != nil {
				s.fail(w, r, err)
				return
			}
		}
	}
	w.WriteHeader(http.StatusNoContent)
}
