package oidctest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/waitroom/waitroom/internal/testkit/oidctest"
)

const (
	clientID     = "backoffice"
	clientSecret = "s3cret:with/odd&chars%" // exercises the form-encoding of basic credentials
	// The redirect URIs are never dialled: the test browser does not follow
	// redirects.
	callbackURL      = "http://127.0.0.1:9/auth/callback"
	otherCallbackURL = "http://127.0.0.1:9/auth/callback?tenant=a"
)

var (
	alice = oidctest.User{Subject: "alice", Email: "alice@example.com", Name: "Alice", Groups: []string{"waitroom-admins", "ops"}, EmailVerified: true}
	bob   = oidctest.User{Subject: "bob", Email: "bob@example.com", Name: "Bob"}
)

// clock is a settable time source shared by the provider and the verifier.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// relyingParty is the back office's side, built only from go-oidc and
// x/oauth2 over the provider's discovery document.
type relyingParty struct {
	op       *oidctest.Provider
	clock    *clock
	provider *oidc.Provider
	conf     oauth2.Config
	verifier *oidc.IDTokenVerifier
	browser  *http.Client // does not follow redirects
}

func newRelyingParty(t *testing.T, style oauth2.AuthStyle) *relyingParty {
	t.Helper()
	clk := newClock()
	op := oidctest.New(t, oidctest.Options{
		ClientID:     clientID,
		ClientSecret: clientSecret,
		RedirectURIs: []string{callbackURL, otherCallbackURL},
		Now:          clk.Now,
	})
	op.AddUser(alice)
	op.AddUser(bob)

	provider, err := oidc.NewProvider(t.Context(), op.Issuer())
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	endpoint := provider.Endpoint()
	endpoint.AuthStyle = style
	return &relyingParty{
		op:       op,
		clock:    clk,
		provider: provider,
		conf: oauth2.Config{
			ClientID:     clientID,
			ClientSecret: clientSecret,
			Endpoint:     endpoint,
			RedirectURL:  callbackURL,
			Scopes:       []string{oidc.ScopeOpenID, "email", "profile", "groups"},
		},
		verifier: provider.Verifier(&oidc.Config{ClientID: clientID, Now: clk.Now}),
		browser: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
	}
}

// login is one front-channel round: what the client sent and the code it
// got back.
type login struct {
	state, nonce, verifier, code string
}

// authorize sends the browser to the authorize endpoint the way the back
// office will, and reads the code off the redirect.
func (rp *relyingParty) authorize(ctx context.Context, opts ...oauth2.AuthCodeOption) (login, error) {
	l := login{state: oauth2.GenerateVerifier(), nonce: oauth2.GenerateVerifier(), verifier: oauth2.GenerateVerifier()}
	opts = append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(l.verifier), oidc.Nonce(l.nonce)}, opts...)
	resp, err := rp.get(ctx, rp.conf.AuthCodeURL(l.state, opts...))
	if err != nil {
		return login{}, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return login{}, fmt.Errorf("authorize: status %d, want 302", resp.StatusCode)
	}
	loc, err := resp.Location()
	if err != nil {
		return login{}, fmt.Errorf("authorize: %w", err)
	}
	if got, want := loc.Scheme+"://"+loc.Host+loc.Path, "http://127.0.0.1:9/auth/callback"; got != want {
		return login{}, fmt.Errorf("redirected to %s, want %s", got, want)
	}
	if got := loc.Query().Get("state"); got != l.state {
		return login{}, fmt.Errorf("state %q came back as %q", l.state, got)
	}
	l.code = loc.Query().Get("code")
	if l.code == "" {
		return login{}, fmt.Errorf("no code in %s", loc)
	}
	return l, nil
}

func (rp *relyingParty) get(ctx context.Context, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return rp.browser.Do(req)
}

// exchange trades the code for tokens with the login's PKCE verifier.
func (rp *relyingParty) exchange(ctx context.Context, l login) (*oauth2.Token, error) {
	return rp.conf.Exchange(ctx, l.code, oauth2.VerifierOption(l.verifier))
}

// verify checks the ID token of tok as the back office will, nonce included.
func (rp *relyingParty) verify(ctx context.Context, tok *oauth2.Token, l login) (*oidc.IDToken, error) {
	raw, ok := tok.Extra("id_token").(string)
	if !ok {
		return nil, errors.New("token response has no id_token")
	}
	idToken, err := rp.verifier.Verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	if idToken.Nonce != l.nonce {
		return nil, fmt.Errorf("nonce %q, want %q", idToken.Nonce, l.nonce)
	}
	return idToken, nil
}

// signIn runs the whole flow and returns the verified ID token.
func (rp *relyingParty) signIn(ctx context.Context, opts ...oauth2.AuthCodeOption) (*oidc.IDToken, *oauth2.Token, error) {
	l, err := rp.authorize(ctx, opts...)
	if err != nil {
		return nil, nil, err
	}
	tok, err := rp.exchange(ctx, l)
	if err != nil {
		return nil, nil, err
	}
	idToken, err := rp.verify(ctx, tok, l)
	return idToken, tok, err
}

type claims struct {
	Email         string   `json:"email"`
	EmailVerified bool     `json:"email_verified"`
	Name          string   `json:"name"`
	Groups        []string `json:"groups"`
}

func TestCodeFlow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		style oauth2.AuthStyle
	}{
		{"client_secret_basic", oauth2.AuthStyleInHeader},
		{"client_secret_post", oauth2.AuthStyleInParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			rp := newRelyingParty(t, tc.style)
			rp.op.SetNextLogin("alice")

			l, err := rp.authorize(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := rp.exchange(ctx, l)
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			if tok.TokenType != "Bearer" || tok.AccessToken == "" || tok.Expiry.IsZero() {
				t.Errorf("token = %+v, want a Bearer access token with an expiry", tok)
			}
			idToken, err := rp.verify(ctx, tok, l)
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if idToken.Subject != "alice" || idToken.Issuer != rp.op.Issuer() {
				t.Errorf("sub %q iss %q, want alice %q", idToken.Subject, idToken.Issuer, rp.op.Issuer())
			}
			if got := idToken.Expiry.Sub(idToken.IssuedAt); got != oidctest.DefaultIDTokenTTL {
				t.Errorf("exp - iat = %v, want %v", got, oidctest.DefaultIDTokenTTL)
			}
			if err := idToken.VerifyAccessToken(tok.AccessToken); err != nil {
				t.Errorf("at_hash: %v", err)
			}
			var c claims
			if err := idToken.Claims(&c); err != nil {
				t.Fatal(err)
			}
			if c.Email != alice.Email || !c.EmailVerified || c.Name != alice.Name || !slices.Equal(c.Groups, alice.Groups) {
				t.Errorf("claims = %+v, want those of %+v", c, alice)
			}

			info, err := rp.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
			if err != nil {
				t.Fatalf("userinfo: %v", err)
			}
			var ic claims
			if err := info.Claims(&ic); err != nil {
				t.Fatal(err)
			}
			if info.Subject != "alice" || info.Email != alice.Email || !slices.Equal(ic.Groups, alice.Groups) {
				t.Errorf("userinfo = %+v %+v, want alice", info, ic)
			}

			auths := rp.op.Authorizations()
			if len(auths) != 1 {
				t.Fatalf("%d authorizations recorded, want 1", len(auths))
			}
			a := auths[0]
			for k, want := range map[string]string{
				"client_id":             clientID,
				"redirect_uri":          callbackURL,
				"response_type":         "code",
				"state":                 l.state,
				"nonce":                 l.nonce,
				"code_challenge_method": "S256",
				"code_challenge":        oauth2.S256ChallengeFromVerifier(l.verifier),
			} {
				if got := a.Get(k); got != want {
					t.Errorf("authorize %s = %q, want %q", k, got, want)
				}
			}
			if !slices.Contains(strings.Fields(a.Get("scope")), "openid") {
				t.Errorf("scope %q lacks openid", a.Get("scope"))
			}
		})
	}
}

func TestLoginChoice(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rp := newRelyingParty(t, oauth2.AuthStyleInHeader)

	// No user chosen: nobody signs in.
	if _, err := rp.authorize(ctx); err == nil || !strings.Contains(err.Error(), "status 400") {
		t.Fatalf("authorize without a user: %v, want status 400", err)
	}

	// login_hint wins over SetNextLogin and leaves it for the next request.
	rp.op.SetNextLogin("alice")
	idToken, _, err := rp.signIn(ctx, oauth2.SetAuthURLParam("login_hint", "bob"))
	if err != nil {
		t.Fatal(err)
	}
	if idToken.Subject != "bob" {
		t.Errorf("login_hint=bob signed in %q", idToken.Subject)
	}
	var c claims
	if err := idToken.Claims(&c); err != nil {
		t.Fatal(err)
	}
	if c.Groups == nil || len(c.Groups) != 0 {
		t.Errorf("groups of a user without groups = %#v, want []", c.Groups)
	}

	idToken, _, err = rp.signIn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if idToken.Subject != "alice" {
		t.Errorf("SetNextLogin(alice) signed in %q", idToken.Subject)
	}

	// SetNextLogin is used once.
	if _, err := rp.authorize(ctx); err == nil {
		t.Error("second authorize after one SetNextLogin succeeded, want 400")
	}
}

func TestRedirectURIKeepsItsQuery(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rp := newRelyingParty(t, oauth2.AuthStyleInHeader)
	rp.conf.RedirectURL = otherCallbackURL
	rp.op.SetNextLogin("alice")

	l := login{state: "st", nonce: "n", verifier: oauth2.GenerateVerifier()}
	resp, err := rp.get(ctx, rp.conf.AuthCodeURL(l.state, oauth2.S256ChallengeOption(l.verifier), oidc.Nonce(l.nonce)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		t.Fatal(err)
	}
	if q := loc.Query(); q.Get("tenant") != "a" || q.Get("state") != "st" || q.Get("code") == "" {
		t.Fatalf("redirected to %s, want tenant=a with code and state", loc)
	}
	l.code = loc.Query().Get("code")
	tok, err := rp.exchange(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rp.verify(ctx, tok, l); err != nil {
		t.Fatal(err)
	}
}

func TestAuthorizeRejects(t *testing.T) {
	t.Parallel()
	rp := newRelyingParty(t, oauth2.AuthStyleInHeader)
	valid := func() url.Values {
		return url.Values{
			"client_id":             {clientID},
			"redirect_uri":          {callbackURL},
			"response_type":         {"code"},
			"scope":                 {"openid email"},
			"state":                 {"state-1"},
			"nonce":                 {"nonce-1"},
			"code_challenge":        {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())},
			"code_challenge_method": {"S256"},
			"login_hint":            {"alice"},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(url.Values)
		want   string // in the 400 body; "" = accepted
	}{
		{"valid", func(url.Values) {}, ""},
		{"missing state", func(q url.Values) { q.Del("state") }, "missing state"},
		{"missing nonce", func(q url.Values) { q.Del("nonce") }, "missing nonce"},
		{"missing code_challenge", func(q url.Values) { q.Del("code_challenge") }, "missing code_challenge"},
		{"missing code_challenge_method", func(q url.Values) { q.Del("code_challenge_method") }, "code_challenge_method"},
		{"plain code_challenge_method", func(q url.Values) { q.Set("code_challenge_method", "plain") }, "code_challenge_method"},
		{"malformed code_challenge", func(q url.Values) { q.Set("code_challenge", "short") }, "malformed code_challenge"},
		{"unknown client_id", func(q url.Values) { q.Set("client_id", "intruder") }, "client_id"},
		{"missing client_id", func(q url.Values) { q.Del("client_id") }, "client_id"},
		{"redirect_uri with trailing slash", func(q url.Values) { q.Set("redirect_uri", callbackURL+"/") }, "redirect_uri"},
		{"missing redirect_uri", func(q url.Values) { q.Del("redirect_uri") }, "redirect_uri"},
		{"implicit flow", func(q url.Values) { q.Set("response_type", "id_token") }, "response_type"},
		{"scope without openid", func(q url.Values) { q.Set("scope", "email profile") }, "openid"},
		{"repeated state", func(q url.Values) { q.Add("state", "state-2") }, "state repeated"},
		{"unknown login_hint", func(q url.Values) { q.Set("login_hint", "mallory") }, "unknown user"},
		{"no user chosen", func(q url.Values) { q.Del("login_hint") }, "no user chosen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := valid()
			tc.change(q)
			resp, err := rp.get(t.Context(), rp.op.Issuer()+"/authorize?"+q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if resp.StatusCode != http.StatusFound {
					t.Errorf("status %d (%s), want 302", resp.StatusCode, body)
				}
				return
			}
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tc.want) {
				t.Errorf("status %d %q, want 400 about %q", resp.StatusCode, body, tc.want)
			}
			if loc := resp.Header.Get("Location"); loc != "" {
				t.Errorf("a refused request redirected to %s", loc)
			}
		})
	}

	// The back office's own call without PKCE, built by x/oauth2.
	t.Run("x/oauth2 without S256ChallengeOption", func(t *testing.T) {
		t.Parallel()
		u := rp.conf.AuthCodeURL("state-3", oidc.Nonce("nonce-3"), oauth2.SetAuthURLParam("login_hint", "alice"))
		resp, err := rp.get(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
		found := false
		for _, a := range rp.op.Authorizations() {
			if a.Get("state") == "state-3" {
				found = true
				if a.Has("code_challenge") || a.Has("code_challenge_method") {
					t.Errorf("recorded %v, want no PKCE parameters", a)
				}
			}
		}
		if !found {
			t.Error("the refused request was not recorded")
		}
	})
}

// retrieveError is the OAuth error of a failed exchange.
func retrieveError(t *testing.T, err error) *oauth2.RetrieveError {
	t.Helper()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		t.Fatalf("exchange error %v (%T), want *oauth2.RetrieveError", err, err)
	}
	return re
}

func TestExchangeRejects(t *testing.T) {
	t.Parallel()

	t.Run("code reused", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		rp := newRelyingParty(t, oauth2.AuthStyleInHeader)
		rp.op.SetNextLogin("alice")
		l, err := rp.authorize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := rp.exchange(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		_, err = rp.exchange(ctx, l)
		if re := retrieveError(t, err); re.ErrorCode != "invalid_grant" || re.ErrorDescription != "code already used" {
			t.Errorf("second exchange: %v, want invalid_grant: code already used", err)
		}
		// The replay revokes the access token the code was exchanged for.
		if _, err := rp.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok)); err == nil {
			t.Error("userinfo with the access token of a replayed code succeeded")
		}
	})

	for _, tc := range []struct {
		name     string
		style    oauth2.AuthStyle
		change   func(*relyingParty, *login)
		wantCode string
		wantDesc string // in error_description
	}{
		{"wrong verifier", oauth2.AuthStyleInHeader, func(_ *relyingParty, l *login) { l.verifier = oauth2.GenerateVerifier() }, "invalid_grant", "code_verifier"},
		{"no verifier", oauth2.AuthStyleInParams, func(_ *relyingParty, l *login) { l.verifier = "" }, "invalid_grant", "code_verifier"},
		{"unknown code", oauth2.AuthStyleInHeader, func(_ *relyingParty, l *login) { l.code += "x" }, "invalid_grant", "unknown code"},
		{"other redirect_uri", oauth2.AuthStyleInHeader, func(rp *relyingParty, _ *login) { rp.conf.RedirectURL = otherCallbackURL }, "invalid_grant", "redirect_uri"},
		{"code expired", oauth2.AuthStyleInHeader, func(rp *relyingParty, _ *login) { rp.clock.Advance(oidctest.CodeTTL + time.Second) }, "invalid_grant", "code expired"},
		{"wrong secret, basic", oauth2.AuthStyleInHeader, func(rp *relyingParty, _ *login) { rp.conf.ClientSecret = "guess" }, "invalid_client", "client authentication failed"},
		{"wrong secret, post", oauth2.AuthStyleInParams, func(rp *relyingParty, _ *login) { rp.conf.ClientSecret = "guess" }, "invalid_client", "client authentication failed"},
		{"wrong client_id", oauth2.AuthStyleInParams, func(rp *relyingParty, _ *login) { rp.conf.ClientID = "intruder" }, "invalid_client", "client authentication failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			rp := newRelyingParty(t, tc.style)
			rp.op.SetNextLogin("alice")
			l, err := rp.authorize(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(rp, &l)
			_, err = rp.exchange(ctx, l)
			if re := retrieveError(t, err); re.ErrorCode != tc.wantCode || !strings.Contains(re.ErrorDescription, tc.wantDesc) {
				t.Errorf("exchange: %v, want %s about %q", err, tc.wantCode, tc.wantDesc)
			}
		})
	}

	t.Run("two authentication methods", func(t *testing.T) {
		t.Parallel()
		rp := newRelyingParty(t, oauth2.AuthStyleInHeader)
		form := url.Values{
			"grant_type":    {"authorization_code"},
			"code":          {"whatever"},
			"client_id":     {clientID},
			"client_secret": {clientSecret},
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, rp.provider.Endpoint().TokenURL, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(clientSecret))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Error string }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusBadRequest || body.Error != "invalid_request" {
			t.Errorf("status %d error %q, want 400 invalid_request", resp.StatusCode, body.Error)
		}
	})
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		arm  func(*relyingParty)
		want string // in the error
	}{
		{"tampered aud", func(rp *relyingParty) {
			rp.op.Tamper(func(c map[string]any) { c["aud"] = "someone-else" })
		}, "expected audience"},
		{"tampered iss", func(rp *relyingParty) {
			rp.op.Tamper(func(c map[string]any) { c["iss"] = "http://127.0.0.1:1" })
		}, "issued by a different provider"},
		{"wrong nonce", func(rp *relyingParty) {
			rp.op.Tamper(func(c map[string]any) { c["nonce"] = "replayed" })
		}, "nonce"},
		{"signed with another key", func(rp *relyingParty) { rp.op.SignWithOtherKey(true) }, "failed to verify id token signature"},
		{"expired by tamper", func(rp *relyingParty) {
			past := rp.clock.Now().Add(-time.Minute).Unix()
			rp.op.Tamper(func(c map[string]any) { c["exp"] = past })
		}, "token is expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			rp := newRelyingParty(t, oauth2.AuthStyleInHeader)
			tc.arm(rp)
			rp.op.SetNextLogin("alice")
			_, _, err := rp.signIn(ctx)
			if err == nil {
				t.Fatal("sign-in succeeded, want a verification failure")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("sign-in: %v, want an error about %q", err, tc.want)
			}
			// The knob is used once: the next sign-in is clean.
			rp.op.SetNextLogin("alice")
			if _, _, err := rp.signIn(ctx); err != nil {
				t.Errorf("sign-in after the tampered one: %v", err)
			}
		})
	}

	t.Run("SignWithOtherKey(false) disarms", func(t *testing.T) {
		t.Parallel()
		rp := newRelyingParty(t, oauth2.AuthStyleInHeader)
		rp.op.SignWithOtherKey(true)
		rp.op.SignWithOtherKey(false)
		if _, _, err := rp.signIn(t.Context(), oauth2.SetAuthURLParam("login_hint", "alice")); err != nil {
			t.Fatal(err)
		}
	})
}

func TestExpiryFollowsTheClock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rp := newRelyingParty(t, oauth2.AuthStyleInHeader)
	rp.op.SetNextLogin("alice")
	l, err := rp.authorize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := rp.exchange(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	rp.clock.Advance(oidctest.DefaultIDTokenTTL + time.Second)

	var expired *oidc.TokenExpiredError
	if _, err := rp.verify(ctx, tok, l); !errors.As(err, &expired) {
		t.Errorf("verify after the TTL: %v, want *oidc.TokenExpiredError", err)
	}
	if _, err := rp.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok)); err == nil {
		t.Error("userinfo with an expired access token succeeded")
	}
}

func TestConcurrentSignIns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rp := newRelyingParty(t, oauth2.AuthStyleInHeader)
	const n = 24
	for i := range n {
		rp.op.AddUser(oidctest.User{Subject: fmt.Sprintf("user-%d", i), Groups: []string{fmt.Sprintf("g%d", i)}})
	}

	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			subject := fmt.Sprintf("user-%d", i)
			idToken, _, err := rp.signIn(ctx, oauth2.SetAuthURLParam("login_hint", subject))
			if err != nil {
				errs[i] = err
				return
			}
			var c claims
			if err := idToken.Claims(&c); err != nil {
				errs[i] = err
				return
			}
			if idToken.Subject != subject || !slices.Equal(c.Groups, []string{fmt.Sprintf("g%d", i)}) {
				errs[i] = fmt.Errorf("signed in %q with groups %v, want %s", idToken.Subject, c.Groups, subject)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := len(rp.op.Authorizations()); got != n {
		t.Errorf("%d authorizations recorded, want %d", got, n)
	}
}

func TestDiscoveryDocument(t *testing.T) {
	t.Parallel()
	rp := newRelyingParty(t, oauth2.AuthStyleInHeader)
	resp, err := rp.get(t.Context(), rp.op.Issuer()+"/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	iss := rp.op.Issuer()
	if !strings.HasPrefix(iss, "http://127.0.0.1:") || strings.HasSuffix(iss, "/") {
		t.Errorf("issuer %q, want http://127.0.0.1:port", iss)
	}
	for k, want := range map[string]any{
		"issuer":                                iss,
		"authorization_endpoint":                iss + "/authorize",
		"token_endpoint":                        iss + "/token",
		"jwks_uri":                              iss + "/jwks",
		"userinfo_endpoint":                     iss + "/userinfo",
		"response_types_supported":              []any{"code"},
		"subject_types_supported":               []any{"public"},
		"id_token_signing_alg_values_supported": []any{"RS256"},
		"code_challenge_methods_supported":      []any{"S256"},
		"token_endpoint_auth_methods_supported": []any{"client_secret_basic", "client_secret_post"},
	} {
		if got := fmt.Sprint(doc[k]); got != fmt.Sprint(want) {
			t.Errorf("%s = %s, want %s", k, got, fmt.Sprint(want))
		}
	}
	for _, k := range []string{"scopes_supported", "claims_supported"} {
		if list, _ := doc[k].([]any); len(list) == 0 {
			t.Errorf("%s missing", k)
		}
	}
}
