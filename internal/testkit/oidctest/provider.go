// Package oidctest runs a real OpenID Connect provider inside a test: an
// httptest server on 127.0.0.1 that speaks the authorization code flow with
// PKCE (S256), state and nonce, signs RS256 ID tokens with a key published
// at its JWKS endpoint, and answers userinfo.
//
// There is no login form. The authorize endpoint signs in the user chosen
// with SetNextLogin, or named by the request's login_hint, and answers an
// immediate 302 to the redirect_uri, so a browser test only follows
// redirects.
//
// Endpoints, all under Issuer():
//
//	GET  /.well-known/openid-configuration
//	GET  /jwks
//	GET  /authorize
//	POST /token      client_secret_basic or client_secret_post
//	GET  /userinfo   (POST too) Authorization: Bearer <access token>
//
// A code is good for one token request, successful or not, within CodeTTL;
// replaying it revokes the access token it was exchanged for. ID tokens carry
// iss, sub, aud (the client id), iat, exp, nonce, at_hash, email,
// email_verified, name and groups (never null).
//
// Negative tests use the knobs: Tamper changes the claims of the next ID
// token, SignWithOtherKey signs it with a key that is not published, and
// Authorizations returns what clients sent to the authorize endpoint.
package oidctest

import (
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"
)

// DefaultIDTokenTTL is the lifetime of ID and access tokens when
// Options.IDTokenTTL is zero.
const DefaultIDTokenTTL = 5 * time.Minute

// CodeTTL is how long an authorization code can be exchanged, by the
// provider's clock.
const CodeTTL = time.Minute

// Options configure the single client the provider knows.
type Options struct {
	// ClientID and ClientSecret authenticate the client at the token
	// endpoint. Both are required.
	ClientID     string
	ClientSecret string
	// RedirectURIs are the registered redirect URIs; the authorize and token
	// endpoints require an exact string match with one of them. At least one
	// is required.
	RedirectURIs []string
	// IDTokenTTL is the lifetime of ID tokens and access tokens; zero means
	// DefaultIDTokenTTL.
	IDTokenTTL time.Duration
	// Now is the provider's clock, used for iat and exp, code expiry and
	// access token expiry; nil means time.Now.
	Now func() time.Time
}

// User is someone who can sign in. Its fields become the ID token and
// userinfo claims sub, email, name, groups and email_verified.
type User struct {
	Subject       string
	Email         string
	Name          string
	Groups        []string
	EmailVerified bool
}

// Provider is a running OpenID Connect provider. Its methods are safe for
// concurrent use.
type Provider struct {
	tb        testing.TB
	srv       *httptest.Server
	opts      Options
	key       signingKey
	closeOnce sync.Once

	mu             sync.Mutex
	users          map[string]User         // by subject
	nextLogin      string                  // subject for the next authorize request; "" = none
	codes          map[string]*authCode    // by code
	tokens         map[string]*accessToken // by access token
	authorizations []url.Values            // every authorize request, in order
	tampers        []func(map[string]any)  // applied to the next ID token
	useOtherKey    bool                    // sign the next ID token with an unpublished key
}

// authCode is an issued authorization code and everything it is bound to.
type authCode struct {
	clientID      string
	redirectURI   string
	nonce         string
	codeChallenge string
	scope         string
	user          User
	issuedAt      time.Time
	used          bool
	accessTokens  []string // issued for this code; revoked if the code is replayed
}

// accessToken is an issued opaque access token.
type accessToken struct {
	user    User
	expires time.Time
	revoked bool
}

// New starts a provider for the client described by opts and closes it when
// the test ends. It fails the test if opts lack a client id, secret or
// redirect URI.
func New(tb testing.TB, opts Options) *Provider {
	tb.Helper()
	switch {
	case opts.ClientID == "":
		tb.Fatal("oidctest: Options.ClientID is required")
	case opts.ClientSecret == "":
		tb.Fatal("oidctest: Options.ClientSecret is required")
	case len(opts.RedirectURIs) == 0:
		tb.Fatal("oidctest: Options.RedirectURIs is required")
	case opts.IDTokenTTL < 0:
		tb.Fatalf("oidctest: Options.IDTokenTTL %v is negative", opts.IDTokenTTL)
	}
	if opts.IDTokenTTL == 0 {
		opts.IDTokenTTL = DefaultIDTokenTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.RedirectURIs = slices.Clone(opts.RedirectURIs)

	key, err := newSigningKey()
	if err != nil {
		tb.Fatalf("oidctest: %v", err)
	}
	p := &Provider{
		tb:     tb,
		opts:   opts,
		key:    key,
		users:  make(map[string]User),
		codes:  make(map[string]*authCode),
		tokens: make(map[string]*accessToken),
	}
	p.srv = httptest.NewServer(p.routes())
	tb.Cleanup(p.Close)
	return p
}

// Issuer returns the provider's issuer URL, which is also its base URL
// (http://127.0.0.1:port, no trailing slash).
func (p *Provider) Issuer() string { return p.srv.URL }

// Close stops the server. It is called when the test ends; calling it
// earlier, or twice, is fine.
func (p *Provider) Close() { p.closeOnce.Do(p.srv.Close) }

// AddUser adds u, or replaces the user with the same Subject. An empty
// Subject is a test error.
func (p *Provider) AddUser(u User) {
	if u.Subject == "" {
		p.tb.Error("oidctest: AddUser: empty Subject")
		return
	}
	u.Groups = slices.Clone(u.Groups)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.users[u.Subject] = u
}

// SetNextLogin chooses the user the next authorize request without a
// login_hint signs in as. The choice is used once; "" clears it. The subject
// is looked up when the request arrives, so it may be added later.
func (p *Provider) SetNextLogin(subject string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextLogin = subject
}

// Authorizations returns a copy of the query of every request the authorize
// endpoint received, accepted or not, oldest first.
func (p *Provider) Authorizations() []url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]url.Values, len(p.authorizations))
	for i, q := range p.authorizations {
		out[i] = cloneValues(q)
	}
	return out
}

// Tamper registers f to change the claims of the next ID token the token
// endpoint issues, after they are built and before they are signed (set a
// wrong "aud" or "nonce", an "exp" in the past, delete a claim). Calls made
// before that token add up and run in order; they are used once.
func (p *Provider) Tamper(f func(claims map[string]any)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tampers = append(p.tampers, f)
}

// SignWithOtherKey(true) makes the next ID token be signed with an RSA key
// that is not in the JWKS, under the published kid, so a client rejects it at
// the signature check rather than at key lookup. It is used once;
// SignWithOtherKey(false) disarms it.
func (p *Provider) SignWithOtherKey(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.useOtherKey = on
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}
