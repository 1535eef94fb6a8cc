package oidctest

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// errAuthorize is an authorize request the provider refuses with a 400; the
// message names the problem.
type errAuthorize string

func (e errAuthorize) Error() string { return "oidctest: " + string(e) }

// tokenError is an RFC 6749 section 5.2 error from the token endpoint.
type tokenError struct {
	status      int
	code        string // invalid_request, invalid_client, invalid_grant, ...
	description string
	basicAuth   bool // the client tried client_secret_basic: ask for it again
}

func (e *tokenError) Error() string { return e.code + ": " + e.description }

func invalidRequest(desc string) *tokenError {
	return &tokenError{status: http.StatusBadRequest, code: "invalid_request", description: desc}
}

func invalidGrant(desc string) *tokenError {
	return &tokenError{status: http.StatusBadRequest, code: "invalid_grant", description: desc}
}

// authorize checks an authorization request, records it, and returns where
// to send the browser: the redirect_uri with a fresh code and the state.
func (p *Provider) authorize(q url.Values) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.authorizations = append(p.authorizations, cloneValues(q))

	for k, vs := range q {
		if len(vs) > 1 {
			return "", errAuthorize(fmt.Sprintf("parameter %s repeated", k))
		}
	}
	if q.Get("client_id") != p.opts.ClientID {
		return "", errAuthorize("unknown client_id")
	}
	redirectURI := q.Get("redirect_uri")
	if !slices.Contains(p.opts.RedirectURIs, redirectURI) {
		return "", errAuthorize("redirect_uri is not registered")
	}
	if rt := q.Get("response_type"); rt != "code" {
		return "", errAuthorize(fmt.Sprintf("response_type %q, want code", rt))
	}
	if !slices.Contains(strings.Fields(q.Get("scope")), "openid") {
		return "", errAuthorize("scope lacks openid")
	}
	for _, name := range []string{"state", "nonce", "code_challenge"} {
		if q.Get(name) == "" {
			return "", errAuthorize("missing " + name)
		}
	}
	if m := q.Get("code_challenge_method"); m != "S256" {
		return "", errAuthorize(fmt.Sprintf("code_challenge_method %q, want S256", m))
	}
	if !isPKCEString(q.Get("code_challenge")) {
		return "", errAuthorize("malformed code_challenge")
	}
	user, err := p.loginLocked(q.Get("login_hint"))
	if err != nil {
		return "", err
	}
	target, err := url.Parse(redirectURI)
	if err != nil {
		return "", errAuthorize("unparsable redirect_uri")
	}

	code := randomToken()
	p.codes[code] = &authCode{
		clientID:      q.Get("client_id"),
		redirectURI:   redirectURI,
		nonce:         q.Get("nonce"),
		codeChallenge: q.Get("code_challenge"),
		scope:         q.Get("scope"),
		user:          user,
		issuedAt:      p.opts.Now(),
	}
	rq := target.Query()
	rq.Set("code", code)
	rq.Set("state", q.Get("state"))
	target.RawQuery = rq.Encode()
	return target.String(), nil
}

// loginLocked picks the user who signs in: the one named by loginHint, or
// else the one chosen with SetNextLogin, whose choice it then uses up.
func (p *Provider) loginLocked(loginHint string) (User, error) {
	subject := loginHint
	if subject == "" {
		subject = p.nextLogin
	}
	if subject == "" {
		return User{}, errAuthorize("no user chosen: call SetNextLogin or send login_hint")
	}
	u, ok := p.users[subject]
	if !ok {
		return User{}, errAuthorize(fmt.Sprintf("unknown user %q", subject))
	}
	if loginHint == "" {
		p.nextLogin = ""
	}
	return u, nil
}

// clientCredentials is what a token request offered to authenticate the
// client, by either method.
type clientCredentials struct {
	basic          bool   // an Authorization header was sent (client_secret_basic)
	basicMalformed bool   // ... but it could not be read
	basicID        string // from the header, form-decoded
	basicSecret    string
	formID         string // the client_id form field
	formSecret     string // the client_secret form field (client_secret_post)
}

// tokenResponse is the token endpoint's success body.
type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	IDToken     string `json:"id_token"`
	Scope       string `json:"scope,omitempty"`
}

// exchange authenticates the client and trades an authorization code for
// tokens.
func (p *Provider) exchange(creds clientCredentials, form url.Values) (tokenResponse, *tokenError) {
	clientID, terr := p.authenticate(creds)
	if terr != nil {
		return tokenResponse{}, terr
	}
	if gt := form.Get("grant_type"); gt != "authorization_code" {
		return tokenResponse{}, &tokenError{status: http.StatusBadRequest, code: "unsupported_grant_type", description: fmt.Sprintf("grant_type %q", gt)}
	}
	code := form.Get("code")
	if code == "" {
		return tokenResponse{}, invalidRequest("missing code")
	}

	g, terr := p.redeem(clientID, code, form)
	if terr != nil {
		return tokenResponse{}, terr
	}
	idToken, err := p.signIDToken(g)
	if err != nil {
		return tokenResponse{}, &tokenError{status: http.StatusInternalServerError, code: "server_error", description: err.Error()}
	}
	return tokenResponse{
		AccessToken: g.access,
		TokenType:   "Bearer",
		ExpiresIn:   int64(p.opts.IDTokenTTL / time.Second),
		IDToken:     idToken,
		Scope:       g.code.scope,
	}, nil
}

// grant is what a redeemed code yields, with the knobs armed for its ID
// token.
type grant struct {
	code        authCode
	access      string
	issuedAt    time.Time
	expires     time.Time
	tampers     []func(map[string]any)
	useOtherKey bool
}

// redeem uses up code, checks it against the token request, issues an
// access token and takes the pending Tamper and SignWithOtherKey knobs.
func (p *Provider) redeem(clientID, code string, form url.Values) (grant, *tokenError) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ac, ok := p.codes[code]
	if !ok {
		return grant{}, invalidGrant("unknown code")
	}
	if ac.used {
		// RFC 6749 4.1.2: a replayed code revokes what it was exchanged for.
		for _, at := range ac.accessTokens {
			p.tokens[at].revoked = true
		}
		return grant{}, invalidGrant("code already used")
	}
	// One attempt per code, successful or not: a wrong verifier cannot be
	// retried.
	ac.used = true
	now := p.opts.Now()
	switch {
	case now.Sub(ac.issuedAt) > CodeTTL:
		return grant{}, invalidGrant("code expired")
	case ac.clientID != clientID:
		return grant{}, invalidGrant("code issued to another client")
	case form.Get("redirect_uri") != ac.redirectURI:
		return grant{}, invalidGrant("redirect_uri does not match the authorization request")
	case !pkceOK(form.Get("code_verifier"), ac.codeChallenge):
		return grant{}, invalidGrant("code_verifier does not match code_challenge")
	}

	g := grant{
		code:        *ac,
		access:      randomToken(),
		issuedAt:    now,
		expires:     now.Add(p.opts.IDTokenTTL),
		tampers:     p.tampers,
		useOtherKey: p.useOtherKey,
	}
	p.tampers, p.useOtherKey = nil, false
	p.tokens[g.access] = &accessToken{user: ac.user, expires: g.expires}
	ac.accessTokens = append(ac.accessTokens, g.access)
	return g, nil
}

// authenticate checks client_secret_basic or client_secret_post (not both)
// and returns the client id.
func (p *Provider) authenticate(c clientCredentials) (string, *tokenError) {
	if c.basicMalformed {
		return "", &tokenError{status: http.StatusUnauthorized, code: "invalid_client", description: "malformed basic credentials", basicAuth: true}
	}
	id, secret := c.formID, c.formSecret
	if c.basic {
		if c.formSecret != "" {
			return "", invalidRequest("more than one client authentication method")
		}
		if c.formID != "" && c.formID != c.basicID {
			return "", invalidRequest("client_id differs from the basic credentials")
		}
		id, secret = c.basicID, c.basicSecret
	}
	idOK := secretEqual(id, p.opts.ClientID)
	secretOK := secretEqual(secret, p.opts.ClientSecret)
	if !idOK || !secretOK {
		return "", &tokenError{status: http.StatusUnauthorized, code: "invalid_client", description: "client authentication failed", basicAuth: c.basic}
	}
	return id, nil
}

// signIDToken builds the ID token claims of g, lets its Tamper functions
// change them, and signs them. It runs without the lock, so a Tamper
// function may call the provider.
func (p *Provider) signIDToken(g grant) (string, error) {
	u := g.code.user
	claims := map[string]any{
		"iss":            p.Issuer(),
		"sub":            u.Subject,
		"aud":            g.code.clientID,
		"iat":            g.issuedAt.Unix(),
		"exp":            g.expires.Unix(),
		"nonce":          g.code.nonce,
		"at_hash":        accessTokenHash(g.access),
		"email":          u.Email,
		"email_verified": u.EmailVerified,
		"name":           u.Name,
		"groups":         groupsClaim(u.Groups),
	}
	for _, f := range g.tampers {
		f(claims)
	}
	priv := p.key.priv
	if g.useOtherKey {
		other, err := newSigningKey()
		if err != nil {
			return "", err
		}
		priv = other.priv
	}
	return signJWT(priv, p.key.kid, claims)
}

// groupsClaim is groups as a claim value: a copy, and [] rather than null.
func groupsClaim(groups []string) []string {
	if groups == nil {
		return []string{}
	}
	return slices.Clone(groups)
}

// userInfo returns the claims of the user an access token was issued to.
func (p *Provider) userInfo(access string) (map[string]any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.tokens[access]
	switch {
	case !ok:
		return nil, errors.New("unknown access token")
	case t.revoked:
		return nil, errors.New("access token revoked")
	case !p.opts.Now().Before(t.expires):
		return nil, errors.New("access token expired")
	}
	return map[string]any{
		"sub":            t.user.Subject,
		"email":          t.user.Email,
		"email_verified": t.user.EmailVerified,
		"name":           t.user.Name,
		"groups":         groupsClaim(t.user.Groups),
	}, nil
}
