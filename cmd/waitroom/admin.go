package main

import (
	"context"

	"github.com/waitroom/waitroom/internal/backoffice/adminsession"
	"github.com/waitroom/waitroom/internal/backoffice/apitoken"
)

// adminCreds are the back office's credentials beside the break-glass
// token: API tokens, people's sessions, and their sign-in through the
// identity provider (nil when not configured).
type adminCreds struct {
	tokens   *apitoken.Tokens
	sessions *adminsession.Sessions
	signIn   *adminsession.SignIn
}

// addAdmin builds them, keyed by the shared secret so that every replica
// checks what any other issued.
func (a *app) addAdmin(context.Context) error {
	var err error
	if a.admin.tokens, err = apitoken.New(a.rdb, a.trust.secret); err != nil {
		return err
	}
	if a.admin.sessions, err = adminsession.New(a.rdb, adminsession.Options{Idle: a.cfg.Admin.SessionIdle, Absolute: a.cfg.Admin.SessionMax}); err != nil {
		return err
	}
	if o := a.cfg.Admin.OIDC; o != nil {
		a.admin.signIn, err = adminsession.NewSignIn(a.rdb, a.trust.secret, adminsession.OIDC{Issuer: o.Issuer, ClientID: o.ClientID,
			ClientSecret: o.ClientSecret, RedirectURL: o.RedirectURL, RolesClaim: o.RolesClaim, Roles: o.Roles})
	}
	return err
}
