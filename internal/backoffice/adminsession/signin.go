package adminsession

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"

	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// signInTTL is how long a sign-in may take at the provider.
const signInTTL = 10 * time.Minute

// exchangeTimeout bounds each call to the provider.
const exchangeTimeout = 10 * time.Second

// providerRetry is how long a failed discovery of the provider stands
// before the next sign-in asks it again.
const providerRetry = 30 * time.Second

var claimScript = redis.NewScript(claimLua)

// Errors of a sign-in coming back, each with its own stable code.
var (
	// ErrState: the state is unknown, used, expired, or was begun in
	// another browser (its sign-in cookie is missing or another's).
	ErrState = errors.New("adminsession: unknown, used or expired sign-in state")
	// ErrReplay: the state was spent already: a sign-in's answer came
	// back twice (an ErrState too). Unlike the other ErrStates, only the
	// holder of the sign-in cookie can make it.
	ErrReplay = fmt.Errorf("%w (spent)", ErrState)
	// ErrCode: the provider refused the code (expired, used, or not for
	// this client), or answered with no ID token.
	ErrCode = errors.New("adminsession: the provider refused the authorization code")
	// ErrIDToken: the ID token failed verification (issuer, audience,
	// expiry, signature, nonce).
	ErrIDToken = errors.New("adminsession: the ID token is not valid")
	// ErrNoRole: the person's groups map to no role.
	ErrNoRole = errors.New("adminsession: the person's groups map to no role")
	// ErrProvider: the provider cannot be reached (discovery).
	ErrProvider = errors.New("adminsession: the identity provider cannot be reached")
)

// OIDC is the identity provider's configuration.
type OIDC struct {
	Issuer, ClientID, ClientSecret string
	// RedirectURL is {WAITROOM_PUBLIC_URL}/admin/callback.
	RedirectURL string
	// RolesClaim names the ID token's claim with the person's groups
	// (default "groups").
	RolesClaim string
	Roles      adminauth.Mapping
	// Client makes the calls to the provider (nil: a client with a 10 s
	// timeout).
	Client *http.Client
}

// SignIn runs the authorization code flow with PKCE, state and nonce.
type SignIn struct {
	cfg  OIDC
	rdb  Redis
	aead cipher.AEAD // seals the sign-in cookies

	mu          sync.Mutex    // guards the discovered provider and the discovery
	discovering chan struct{} // closed when the discovery under way ends; nil: none
	failedAt    time.Time     // when the last discovery failed
	provider    *oidc.Provider
	verifier    *oidc.IDTokenVerifier
	oauth       oauth2.Config
}

// NewSignIn returns the flow for cfg; secret (WAITROOM_SECRET, or the
// shared generated one) keys the sign-in cookies, so that any replica can
// finish a sign-in another began. The provider is discovered at the
// first sign-in (and again after a failure), so that a provider down
// when waitroom starts does not stop it.
func NewSignIn(rdb Redis, secret []byte, cfg OIDC) (*SignIn, error) {
	if rdb == nil || len(secret) == 0 || cfg.Issuer == "" || cfg.ClientID == "" || cfg.RedirectURL == "" || len(cfg.Roles) == 0 {
		return nil, errors.New("adminsession: OIDC needs Redis, a secret, an issuer, a client id, a redirect URL and a role mapping")
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("waitroom sign-in cookie key v1"))
	block, _ := aes.NewCipher(m.Sum(nil)) // a 32-byte key cannot fail
	aead, _ := cipher.NewGCM(block)
	if cfg.RolesClaim == "" {
		cfg.RolesClaim = "groups"
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: exchangeTimeout}
	}
	return &SignIn{cfg: cfg, rdb: rdb, aead: aead}, nil
}

// Issuer is the provider's issuer URL.
func (s *SignIn) Issuer() string { return s.cfg.Issuer }

// discover finds the provider's endpoints and keys, once: concurrent
// callers wait for one discovery, and after a failure every caller is
// answered ErrProvider for providerRetry without asking again, so a
// provider that is down costs one request at a time, not one per sign-in.
func (s *SignIn) discover(ctx context.Context) error {
	s.mu.Lock()
	for s.provider == nil && s.discovering != nil {
		wait := s.discovering
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrProvider, ctx.Err())
		}
		s.mu.Lock()
	}
	if s.provider != nil {
		s.mu.Unlock()
		return nil
	}
	if time.Since(s.failedAt) < providerRetry {
		s.mu.Unlock()
		return ErrProvider
	}
	done := make(chan struct{})
	s.discovering = done
	s.mu.Unlock()

	// A context of its own: the discovery serves every caller, and the
	// key set is fetched with it later too.
	base := oidc.ClientContext(context.Background(), s.cfg.Client)
	dctx, cancel := context.WithTimeout(base, exchangeTimeout)
	p, err := oidc.NewProvider(dctx, s.cfg.Issuer)
	cancel()

	s.mu.Lock()
	defer s.mu.Unlock()
	s.discovering = nil
	close(done)
	if err != nil {
		s.failedAt = time.Now()
		return fmt.Errorf("%w: %w", ErrProvider, err)
	}
	s.provider = p
	s.verifier = p.VerifierContext(base, &oidc.Config{ClientID: s.cfg.ClientID})
	s.oauth = oauth2.Config{ClientID: s.cfg.ClientID, ClientSecret: s.cfg.ClientSecret, RedirectURL: s.cfg.RedirectURL,
		Endpoint: p.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
	return nil
}

// pending is a sign-in at the provider, sealed into the browser's
// sign-in cookie: nothing is written anywhere until the provider sends
// the browser back, so asking to sign in costs a replica no memory and
// Redis nothing, however often it is asked.
type pending struct {
	State    string `json:"state"`
	Nonce    string `json:"nonce"`
	Verifier string `json:"verifier"`
	Expires  int64  `json:"exp"` // unix ms
}

// Begin starts a sign-in: the provider's URL to send the browser to, and
// the value of the browser's sign-in cookie, which binds the sign-in to
// that browser.
func (s *SignIn) Begin(ctx context.Context) (authURL, cookie string, err error) {
	if err := s.discover(ctx); err != nil {
		return "", "", err
	}
	p := pending{State: rand.Text() + rand.Text(), Nonce: rand.Text() + rand.Text(), Verifier: oauth2.GenerateVerifier(),
		Expires: time.Now().Add(signInTTL).UnixMilli()}
	b, _ := json.Marshal(p) // plain fields
	return s.oauth.AuthCodeURL(p.State, oidc.Nonce(p.Nonce), oauth2.S256ChallengeOption(p.Verifier)), s.seal(b), nil
}

// Finish takes the provider's answer (state, code) in the browser whose
// sign-in cookie is cookie: it spends the state (once, on every
// replica), exchanges the code, verifies the ID token and maps the
// person's groups to grants.
func (s *SignIn) Finish(ctx context.Context, state, code, cookie string) (Person, error) {
	var p pending
	b, ok := s.open(cookie)
	if !ok || json.Unmarshal(b, &p) != nil || time.Now().UnixMilli() >= p.Expires ||
		subtle.ConstantTimeCompare([]byte(state), []byte(p.State)) != 1 || code == "" || len(code) > 4096 {
		return Person{}, ErrState
	}
	if err := s.discover(ctx); err != nil {
		return Person{}, err
	}
	spent, err := claimScript.Run(ctx, s.rdb, []string{rediskeys.SignIn(p.State)}, signInTTL.Milliseconds()).Int()
	if err != nil {
		return Person{}, fmt.Errorf("adminsession: claim: %w", err)
	}
	if spent != 1 {
		return Person{}, ErrReplay
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, s.cfg.Client), exchangeTimeout)
	defer cancel()
	tok, err := s.oauth.Exchange(ctx, code, oauth2.VerifierOption(p.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return Person{}, fmt.Errorf("%w: %s", ErrCode, re.ErrorCode)
		}
		return Person{}, fmt.Errorf("%w: %w", ErrProvider, err)
	}
	rawID, ok := tok.Extra("id_token").(string)
	if !ok {
		return Person{}, ErrCode
	}
	id, err := s.verifier.Verify(ctx, rawID)
	if err != nil {
		return Person{}, fmt.Errorf("%w: %w", ErrIDToken, err)
	}
	if subtle.ConstantTimeCompare([]byte(id.Nonce), []byte(p.Nonce)) != 1 {
		return Person{}, fmt.Errorf("%w: nonce", ErrIDToken)
	}
	return s.person(id)
}

// seal encrypts and authenticates b (AES-256-GCM) for a cookie.
func (s *SignIn) seal(b []byte) string {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, b, nil))
}

// open is seal's inverse; false when v was not sealed by a replica of
// this service.
func (s *SignIn) open(v string) ([]byte, bool) {
	if v == "" || len(v) > 2048 {
		return nil, false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(v) // Strict: one text per sealed value
	n := s.aead.NonceSize()
	if err != nil || len(raw) < n {
		return nil, false
	}
	b, err := s.aead.Open(nil, raw[:n], raw[n:], nil)
	return b, err == nil
}

// person reads who the ID token names and what their groups grant.
func (s *SignIn) person(id *oidc.IDToken) (Person, error) {
	var claims map[string]any
	if err := id.Claims(&claims); err != nil {
		return Person{}, fmt.Errorf("%w: %w", ErrIDToken, err)
	}
	// The e-mail names the person only when the provider vouches for it:
	// some providers send none, and some let people set it themselves.
	name := id.Subject
	if email, _ := claims["email"].(string); email != "" && (claims["email_verified"] == true || claims["email_verified"] == "true") {
		name = email
	}
	if name == "" || len(name) > 256 || !utf8.ValidString(name) || strings.ContainsFunc(name, disguising) {
		return Person{}, fmt.Errorf("%w: no usable subject or e-mail", ErrIDToken)
	}
	p := Person{Name: name, Subject: id.Subject, Grants: s.cfg.Roles.Grants(groups(claims[s.cfg.RolesClaim]))}
	if len(p.Grants) == 0 {
		return p, ErrNoRole
	}
	return p, nil
}

// disguising reports whether r is a character that can make a name read
// as another: control characters, and format ones (bidirectional
// overrides, zero-width joiners).
func disguising(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }

// groups reads a groups claim: a list of strings, or one string.
func groups(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, g := range v {
			if s, ok := g.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
