package config

import (
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/backoffice/apitoken"
)

// Admin is how operators sign in to the back office and the admin API.
type Admin struct {
	// Token is the break-glass admin credential (WAITROOM_ADMIN_TOKEN);
	// empty: none.
	Token string
	// OIDC, when set, signs people in through the company's identity
	// provider (WAITROOM_OIDC_*).
	OIDC *OIDC
	// SessionIdle and SessionMax bound a person's sign-in
	// (WAITROOM_ADMIN_SESSION_IDLE, default 30m; _MAX, default 12h).
	SessionIdle, SessionMax time.Duration
}

// Enabled reports whether anyone can sign in: with the admin token, or
// through the provider (API tokens are made by one of those).
func (a Admin) Enabled() bool { return a.Token != "" || a.OIDC != nil }

// OIDC is the identity provider's configuration.
type OIDC struct {
	Issuer       string            // WAITROOM_OIDC_ISSUER
	ClientID     string            // WAITROOM_OIDC_CLIENT_ID
	ClientSecret string            // WAITROOM_OIDC_CLIENT_SECRET
	RedirectURL  string            // {WAITROOM_PUBLIC_URL}/admin/callback
	RolesClaim   string            // WAITROOM_OIDC_ROLES_CLAIM, default "groups"
	Roles        adminauth.Mapping // WAITROOM_OIDC_ROLES
}

// loadAdmin reads the admin token, the identity provider and the
// sessions' lifetimes. It runs after loadTrust (the public URL).
func (c *Config) loadAdmin(r *reader) {
	c.Admin.Token = c.AdminToken
	if strings.HasPrefix(c.Admin.Token, apitoken.Prefix) {
		r.failf("WAITROOM_ADMIN_TOKEN: must not begin with %q, the API tokens' prefix (it would be read as one)", apitoken.Prefix)
	}
	c.Admin.SessionIdle = r.duration("WAITROOM_ADMIN_SESSION_IDLE", "30m")
	c.Admin.SessionMax = r.duration("WAITROOM_ADMIN_SESSION_MAX", "12h")
	if c.Admin.SessionIdle < time.Minute || c.Admin.SessionMax < c.Admin.SessionIdle || c.Admin.SessionMax > 7*24*time.Hour {
		r.failf("WAITROOM_ADMIN_SESSION_IDLE, _MAX: want 1m ≤ idle ≤ max ≤ 168h, got %s and %s", c.Admin.SessionIdle, c.Admin.SessionMax)
	}
	issuer := r.str("WAITROOM_OIDC_ISSUER", "")
	if issuer == "" {
		for _, k := range []string{"WAITROOM_OIDC_CLIENT_ID", "WAITROOM_OIDC_CLIENT_SECRET", "WAITROOM_OIDC_ROLES"} {
			if r.str(k, "") != "" {
				r.failf("%s: set WAITROOM_OIDC_ISSUER too, or unset it", k)
			}
		}
		return
	}
	o := &OIDC{Issuer: issuer, ClientID: r.str("WAITROOM_OIDC_CLIENT_ID", ""), ClientSecret: r.raw("WAITROOM_OIDC_CLIENT_SECRET"),
		RolesClaim: r.str("WAITROOM_OIDC_ROLES_CLAIM", "groups")}
	if !secureURL(issuer) {
		r.failf("WAITROOM_OIDC_ISSUER: want an https URL (http only on a loopback address, for tests)")
	}
	if o.ClientID == "" || o.ClientSecret == "" {
		r.failf("WAITROOM_OIDC_CLIENT_ID and WAITROOM_OIDC_CLIENT_SECRET: both are needed with WAITROOM_OIDC_ISSUER")
	}
	if c.PublicURL == "" || !secureURL(c.PublicURL) {
		r.failf("WAITROOM_PUBLIC_URL: sign-in through OIDC needs the https origin people reach the back office at (http only on a loopback address); the redirect URI is {WAITROOM_PUBLIC_URL}/admin/callback")
	}
	o.RedirectURL = c.PublicURL + "/admin/callback"
	if !c.CookieSecure && c.PublicURL != "" && !loopback(c.PublicURL) {
		r.failf("WAITROOM_COOKIE_SECURE=false with OIDC: the back office's session cookie would lose Secure and __Host- on %s; only on a loopback WAITROOM_PUBLIC_URL", c.PublicURL)
	}
	var err error
	if o.Roles, err = adminauth.ParseMapping(r.str("WAITROOM_OIDC_ROLES", "")); err != nil {
		r.failf("WAITROOM_OIDC_ROLES: want group=role[:queue|queue...], comma-separated (e.g. wr-admin=admin,wr-ops=operator:sale,wr-view=viewer): %w", err)
	}
	c.Admin.OIDC = o
}

// secureURL reports whether v is an https URL, or an http one on a
// loopback address.
func secureURL(v string) bool {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	return u.Scheme == "https" || u.Scheme == "http" && loopback(v)
}

// loopback reports whether URL v's host is localhost or a loopback
// address.
func loopback(v string) bool {
	u, err := url.Parse(v)
	if err != nil {
		return false
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}
