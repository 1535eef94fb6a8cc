// Package pass owns the entry pass: the signed, revocable proof of an
// admission that the order page checks. A pass is a JWT signed with
// Ed25519 (EdDSA, RFC 8037) under a key of the ring (keys.go), whose
// public half is published as a JWKS, so an order page in any language
// can check it offline; Check adds what offline checks cannot see, that
// the admission is still current.
//
// Ed25519 rather than ES256: signatures are deterministic (no per-signature
// random nonce to get wrong), signing and verifying are faster, keys are 32
// bytes, and every major JWT library verifies EdDSA.
package pass

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Errors of Verify and Check; both wrap the reason.
var (
	// ErrInvalid means a token is not a valid pass now: malformed, a bad
	// signature, an unknown kid, another algorithm, another issuer,
	// expired or not yet valid.
	ErrInvalid = errors.New("pass: invalid pass")
	// ErrRevoked means a pass is valid but its admission has ended: the
	// user left or entered again, the session expired, or the operator
	// removed them.
	ErrRevoked = fmt.Errorf("%w: its admission has ended", ErrInvalid)
)

// Leeway is the clock skew tolerated between the replica that checks a
// pass and the Redis clock that dated it. Check is exact whatever the
// skew: it asks Redis whether the admission is current.
const Leeway = time.Second

// Claims are what a valid pass says.
type Claims struct {
	Queue      string    // aud
	Subject    string    // sub: the member id of the place
	ID         string    // jti
	IssuedAt   time.Time // iat
	NotBefore  time.Time // nbf: the admission's start, to the second
	Expires    time.Time // exp: the admission's end (start + session TTL)
	AdmittedAt time.Time // adm: the admission's start in ms, which names it
}

// Passes issues passes for one issuer with one key ring, and verifies
// them with the ring's keys.
type Passes struct {
	*Verifier
	keys   *Keys
	issuer string
}

// New returns passes signed by keys' signing key, with iss = issuer.
func New(keys *Keys, issuer string) (*Passes, error) {
	if keys == nil || issuer == "" {
		return nil, errors.New("pass: keys and issuer are required")
	}
	return &Passes{Verifier: NewVerifier(issuer, keys.key), keys: keys, issuer: issuer}, nil
}

// Verifier checks passes of one issuer offline, with the public keys that
// keyfunc finds by a token's kid: a local ring (Passes), or a remote JWKS
// (the gate package).
type Verifier struct {
	parser  *jwt.Parser
	keyfunc jwt.Keyfunc
}

// NewVerifier returns a verifier of issuer's passes. Its parser decodes
// strictly: a pass has one spelling (see Verify).
func NewVerifier(issuer string, keyfunc jwt.Keyfunc) *Verifier {
	return &Verifier{
		keyfunc: keyfunc,
		parser: jwt.NewParser(
			jwt.WithStrictDecoding(),
			jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
			jwt.WithIssuer(issuer),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(Leeway),
		),
	}
}

// Keys returns the ring, for the JWKS.
func (p *Passes) Keys() *Keys { return p.keys }

// Issue signs a pass for member's admission to queue that began at
// admittedAt and ends at ends. Each call gives a new jti.
func (p *Passes) Issue(queue, member string, admittedAt, ends time.Time) (string, error) {
	var id [16]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	c := &claims{
		Issuer:    p.issuer,
		Subject:   member,
		Audience:  queue,
		IssuedAt:  jwt.NewNumericDate(time.Now()),
		NotBefore: jwt.NewNumericDate(admittedAt),
		Expires:   jwt.NewNumericDate(ends),
		ID:        b64(id[:]),
		Admitted:  admittedAt.UnixMilli(),
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	tok.Header["kid"] = p.keys.signing.kid
	s, err := tok.SignedString(p.keys.signing.priv)
	if err != nil {
		return "", fmt.Errorf("pass: sign: %w", err)
	}
	return s, nil
}

// Verify checks a pass offline: signature under a key of the ring named
// by its kid, alg EdDSA, issuer, and validity now. It does not see
// revocation; Check does.
func (v *Verifier) Verify(token string) (Claims, error) {
	// A pass has one spelling: the signature's bytes can be written
	// otherwise (the unused low bits of its last character, which the
	// strict parser refuses, or CR and LF, which encoding/base64 skips in
	// any mode), and a second spelling would pass for another token
	// wherever tokens are compared as strings (the cache, logs).
	if strings.ContainsAny(token, "\r\n") {
		return Claims{}, fmt.Errorf("%w: a line break in the token", ErrInvalid)
	}
	var c claims
	_, err := v.parser.ParseWithClaims(token, &c, v.keyfunc)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return c.public()
}

// UnverifiedClaims reads a pass's claims WITHOUT checking its signature,
// issuer or validity: anyone can write a token it accepts. It is for a
// client that reads a pass the service has just handed it (the soak and
// the load generators, which want the admission's start, adm), never for
// deciding whether to let anyone in: that is Verify and Check.
func UnverifiedClaims(token string) (Claims, error) {
	var c claims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &c); err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return c.public()
}

// public is what a pass says, once its payload is decoded; a payload
// without sub, aud, nbf or adm is not a pass.
func (c *claims) public() (Claims, error) {
	if c.Subject == "" || c.Audience == "" || c.NotBefore == nil || c.Admitted <= 0 {
		return Claims{}, fmt.Errorf("%w: sub, aud, nbf and adm are required", ErrInvalid)
	}
	out := Claims{
		Queue:      c.Audience,
		Subject:    c.Subject,
		ID:         c.ID,
		NotBefore:  c.NotBefore.Time,
		AdmittedAt: time.UnixMilli(c.Admitted),
	}
	if c.Expires != nil {
		out.Expires = c.Expires.Time
	}
	if c.IssuedAt != nil {
		out.IssuedAt = c.IssuedAt.Time
	}
	return out, nil
}

// Admissions tells whether an admission is still its member's current
// one. A queue the implementation does not serve holds none.
type Admissions interface {
	// Current reports whether member's current admission to queue is the
	// one that began at start (the pass's adm). With sliding sessions the
	// check also renews it (queue.Store.Current).
	Current(ctx context.Context, queue, member string, start time.Time) (bool, error)
}

// Check verifies a pass as Verify does, then asks adm whether the
// admission it names is still the member's current one: ErrRevoked when
// it is not. Errors from adm (Redis away) are returned as they are, so
// the caller can tell "not valid" from "cannot tell now".
func (v *Verifier) Check(ctx context.Context, token string, adm Admissions) (Claims, error) {
	c, err := v.Verify(token)
	if err != nil {
		return Claims{}, err
	}
	ok, err := Current(adm)(ctx, token, c)
	if err != nil {
		return Claims{}, err
	}
	if !ok {
		return Claims{}, ErrRevoked
	}
	return c, nil
}

// Current is the revocation check against adm: a pass is current while
// the admission it names is its member's current one.
func Current(adm Admissions) CurrentFunc {
	return func(ctx context.Context, _ string, c Claims) (bool, error) {
		return adm.Current(ctx, c.Queue, c.Subject, c.AdmittedAt)
	}
}

// claims is the pass's payload. aud is a single string (the queue), which
// jwt.RegisteredClaims would write as an array.
type claims struct {
	Issuer    string           `json:"iss"`
	Subject   string           `json:"sub"`
	Audience  string           `json:"aud"`
	IssuedAt  *jwt.NumericDate `json:"iat,omitempty"`
	NotBefore *jwt.NumericDate `json:"nbf,omitempty"`
	Expires   *jwt.NumericDate `json:"exp,omitempty"`
	ID        string           `json:"jti"`
	Admitted  int64            `json:"adm"`
}

func (c *claims) GetExpirationTime() (*jwt.NumericDate, error) { return c.Expires, nil }
func (c *claims) GetIssuedAt() (*jwt.NumericDate, error)       { return c.IssuedAt, nil }
func (c *claims) GetNotBefore() (*jwt.NumericDate, error)      { return c.NotBefore, nil }
func (c *claims) GetIssuer() (string, error)                   { return c.Issuer, nil }
func (c *claims) GetSubject() (string, error)                  { return c.Subject, nil }
func (c *claims) GetAudience() (jwt.ClaimStrings, error)       { return jwt.ClaimStrings{c.Audience}, nil }
