package adminapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/backoffice/adminsession"
	"github.com/waitroom/waitroom/internal/backoffice/apitoken"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// The admin API's own credentials: who is signed in (/me), API tokens for
// scripts, and ending a person's sessions.

var (
	errInvalidRole     = &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_role", Message: "role must be viewer, operator or admin", Field: "role"}
	errInvalidQueues   = &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_queues", Message: "queues must be a list of this service's queues, empty for all, and empty for an admin", Field: "queues"}
	errInvalidExpiry   = &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_expiry", Message: apitoken.ErrInvalidExpiry.Error()[len("apitoken: "):], Field: "expires_in_s"}
	errInvalidName     = &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_name", Message: apitoken.ErrInvalidName.Error()[len("apitoken: "):], Field: "name"}
	errTooManyTokens   = &httpkit.Error{Status: http.StatusConflict, Code: "too_many_tokens", Message: apitoken.ErrTooMany.Error()[len("apitoken: "):]}
	errTokenNotFound   = &httpkit.Error{Status: http.StatusNotFound, Code: "token_not_found", Message: "no such token"}
	errInvalidPersonID = &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_person", Message: "name the person as the audit log does: their e-mail or subject, 1 to 256 bytes"}
	errPersonNotFound  = &httpkit.Error{Status: http.StatusNotFound, Code: "person_not_found", Message: "this person has no live session: check the name as the audit log writes it"}
)

// MeResponse is who the caller is, and what the back office may show
// them.
type MeResponse struct {
	Actor  actor.Actor       `json:"actor"`
	Role   adminauth.Role    `json:"role"`
	Grants []adminauth.Grant `json:"grants"`
	// Queues are those the caller may see; Operate those whose settings
	// it may change.
	Queues  []string `json:"queues"`
	Operate []string `json:"operate"`
	// Admin: the caller may manage tokens, sessions, webhooks and probes.
	Admin bool `json:"admin"`
}

// Me answers who the request's credential stands for.
func (s *API) Me(w http.ResponseWriter, r *http.Request) {
	p, _ := adminauth.FromContext(r.Context())
	out := MeResponse{Actor: p.Actor, Role: p.Role(), Grants: p.Grants, Queues: []string{}, Operate: []string{}, Admin: p.Allows(adminauth.Admin, "")}
	for _, q := range s.store.Queues() {
		if p.Sees(q) {
			out.Queues = append(out.Queues, q)
		}
		if p.Allows(adminauth.Operator, q) {
			out.Operate = append(out.Operate, q)
		}
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

type createTokenRequest struct {
	Name      string   `json:"name"`
	Role      string   `json:"role"`
	Queues    []string `json:"queues"`
	ExpiresIn *int64   `json:"expires_in_s"`
}

// CreateTokenResponse is a new token, with its secret shown this once.
type CreateTokenResponse struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Role      adminauth.Role `json:"role"`
	Queues    []string       `json:"queues"`
	ExpiresAt time.Time      `json:"expires_at"`
	Token     string         `json:"token"`
}

// CreateToken makes an API token; its secret is in this answer alone.
func (s *API) CreateToken(w http.ResponseWriter, r *http.Request) {
	req, err := httpkit.Decode[createTokenRequest](w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	tr, err := s.tokenRequest(r, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminRedisTimeout)
	defer cancel()
	tok, secret, err := s.admin.tokens.Create(ctx, tr)
	if err != nil {
		s.fail(w, r, tokenError(err))
		return
	}
	s.logger(r).Info("API token created", "id", tok.ID, "name", tok.Name, "role", tok.Role.String(), "by", tr.By.String())
	httpkit.WriteJSON(w, http.StatusCreated, CreateTokenResponse{ID: tok.ID, Name: tok.Name, Role: tok.Role, Queues: tok.Queues,
		ExpiresAt: tok.ExpiresAt, Token: secret})
}

// tokenRequest checks a token's request: a known role, queues this
// service has (none for an admin), an expiry in range.
func (s *API) tokenRequest(r *http.Request, req createTokenRequest) (apitoken.Request, error) {
	role, err := adminauth.ParseRole(req.Role)
	if err != nil {
		return apitoken.Request{}, errInvalidRole
	}
	for _, q := range req.Queues {
		if !slices.Contains(s.store.Queues(), q) {
			return apitoken.Request{}, errInvalidQueues
		}
	}
	tr := apitoken.Request{Name: req.Name, Grant: adminauth.Grant{Role: role, Queues: req.Queues}, By: actor.FromContext(r.Context())}
	if req.ExpiresIn != nil {
		if *req.ExpiresIn <= 0 || *req.ExpiresIn > int64(apitoken.MaxLifetime/time.Second) {
			return apitoken.Request{}, errInvalidExpiry
		}
		tr.ExpiresIn = time.Duration(*req.ExpiresIn) * time.Second
	}
	return tr, tokenError(tr.Check())
}

// tokenError is err of apitoken as the API answers it.
func tokenError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, apitoken.ErrInvalidName):
		return errInvalidName
	case errors.Is(err, apitoken.ErrInvalidExpiry):
		return errInvalidExpiry
	case errors.Is(err, adminauth.ErrInvalidRole):
		return errInvalidRole
	case errors.Is(err, adminauth.ErrInvalidQueues):
		return errInvalidQueues
	case errors.Is(err, apitoken.ErrTooMany):
		return errTooManyTokens
	case errors.Is(err, apitoken.ErrNotFound):
		return errTokenNotFound
	case errors.Is(err, adminsession.ErrNoSession):
		return errPersonNotFound
	}
	return err
}

// Tokens answers the live tokens, without their secrets.
func (s *API) Tokens(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), adminRedisTimeout)
	defer cancel()
	toks, err := s.admin.tokens.List(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, struct {
		Tokens []apitoken.Token `json:"tokens"`
	}{toks})
}

// RevokeToken deletes a token: refused here at once, on every replica
// within a second (apitoken.CacheFor).
func (s *API) RevokeToken(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), adminRedisTimeout)
	defer cancel()
	id := chi.URLParam(r, "id")
	if err := s.admin.tokens.Revoke(ctx, id); err != nil {
		s.fail(w, r, tokenError(err))
		return
	}
	s.logger(r).Info("API token revoked", "id", id, "by", actor.FromContext(r.Context()).String())
	w.WriteHeader(http.StatusNoContent)
}

// EndSessions ends every sign-in of the person the path names (as the
// audit log names them): here at once, on every replica within a second.
func (s *API) EndSessions(w http.ResponseWriter, r *http.Request) {
	person, err := httpkit.PathParam(r, "person") // an e-mail's @ and + arrive escaped
	if err != nil || person == "" || len(person) > 256 {
		s.fail(w, r, errInvalidPersonID)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminRedisTimeout)
	defer cancel()
	n, err := s.admin.sessions.EndPerson(ctx, person)
	if err != nil {
		s.fail(w, r, tokenError(err))
		return
	}
	s.logger(r).Info("sessions ended", "person", person, "ended", n, "by", actor.FromContext(r.Context()).String())
	httpkit.WriteJSON(w, http.StatusOK, struct {
		Person string `json:"person"`
		Ended  int    `json:"ended"`
	}{person, n})
}
