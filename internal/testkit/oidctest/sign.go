package oidctest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"
)

// signingKey is the provider's RS256 key and the kid it is published under.
type signingKey struct {
	priv *rsa.PrivateKey
	kid  string
}

// newSigningKey makes a 2048-bit RSA key whose kid is its RFC 7638
// thumbprint.
func newSigningKey() (signingKey, error) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return signingKey{}, fmt.Errorf("generate RSA key: %w", err)
	}
	tp, err := (&jose.JSONWebKey{Key: &priv.PublicKey}).Thumbprint(crypto.SHA256)
	if err != nil {
		return signingKey{}, fmt.Errorf("thumbprint: %w", err)
	}
	return signingKey{priv: priv, kid: base64.RawURLEncoding.EncodeToString(tp)}, nil
}

// jwks is the public half of k as a JSON Web Key Set.
func (k signingKey) jwks() jose.JSONWebKeySet {
	return jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key:       &k.priv.PublicKey,
		KeyID:     k.kid,
		Algorithm: string(jose.RS256),
		Use:       "sig",
	}}}
}

// signJWT signs claims as a compact RS256 JWT with priv, naming kid in the
// header.
func signJWT(priv *rsa.PrivateKey, kid string, claims map[string]any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encode claims: %w", err)
	}
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: priv, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"),
	)
	if err != nil {
		return "", fmt.Errorf("signer: %w", err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	return jws.CompactSerialize()
}

// accessTokenHash is the at_hash claim for an RS256 ID token: the left half
// of SHA-256 of the access token, base64url without padding.
func accessTokenHash(accessToken string) string {
	sum := sha256.Sum256([]byte(accessToken))
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
}

// s256Challenge is the PKCE S256 code challenge of verifier (RFC 7636 4.2).
func s256Challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// pkceOK reports whether verifier is well formed (RFC 7636 4.1: 43 to 128
// unreserved characters) and hashes to challenge.
func pkceOK(verifier, challenge string) bool {
	if !isPKCEString(verifier) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(s256Challenge(verifier)), []byte(challenge)) == 1
}

// isPKCEString reports whether s has the length and alphabet RFC 7636 allows
// for a code verifier or challenge.
func isPKCEString(s string) bool {
	if len(s) < 43 || len(s) > 128 {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}

// secretEqual compares secrets in constant time.
func secretEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// randomToken is an unguessable opaque string for codes and access tokens.
func randomToken() string { return rand.Text() }
