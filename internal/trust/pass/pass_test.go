package pass

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/golang-jwt/jwt/v5"
)

const issuer = "https://waitroom.test"

func genPEM(t *testing.T) []byte {
	t.Helper()
	p, err := GenerateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ring(t *testing.T, blocks ...[]byte) *Passes {
	t.Helper()
	keys, err := ParseKeys(joinPEM(blocks...))
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(keys, issuer)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func joinPEM(blocks ...[]byte) []byte {
	var out []byte
	for _, b := range blocks {
		out = append(out, b...)
	}
	return out
}

// publicPEM is the public half of a private key PEM.
func publicPEM(t *testing.T, privPEM []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(privPEM)
	v, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(v.(crypto.Signer).Public())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// joseVerify checks a pass the way an order page in another stack would:
// with go-jose, a library independent of the one that signed it, against
// the published JWKS alone.
func joseVerify(t *testing.T, jwks []byte, pass, queue string, now time.Time) (map[string]any, error) {
	t.Helper()
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(jwks, &set); err != nil {
		t.Fatalf("JWKS %s: %v", jwks, err)
	}
	tok, err := josejwt.ParseSigned(pass, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return nil, err
	}
	if len(tok.Headers) != 1 {
		return nil, errors.New("want one signature")
	}
	keys := set.Key(tok.Headers[0].KeyID)
	if len(keys) != 1 {
		return nil, errors.New("kid not in the JWKS")
	}
	var std josejwt.Claims
	var all map[string]any
	if err := tok.Claims(keys[0].Key, &std, &all); err != nil {
		return nil, err
	}
	if err := std.ValidateWithLeeway(josejwt.Expected{Issuer: issuer, AnyAudience: josejwt.Audience{queue}, Time: now}, 0); err != nil {
		return nil, err
	}
	return all, nil
}

// A pass carries the documented claims and verifies with go-jose against
// the JWKS; the kid is the key's RFC 7638 thumbprint as go-jose computes it.
func TestPassVerifiesWithAnIndependentLibrary(t *testing.T) {
	p := ring(t, genPEM(t))
	admitted := time.UnixMilli(time.Now().Add(-time.Second).UnixMilli())
	ends := admitted.Add(10 * time.Minute)
	tok, err := p.Issue("default", "a:member", admitted, ends)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := joseVerify(t, p.Keys().JWKS(), tok, "default", time.Now())
	if err != nil {
		t.Fatalf("go-jose refused the pass: %v", err)
	}
	if claims["aud"] != "default" || claims["sub"] != "a:member" || claims["iss"] != issuer ||
		claims["exp"] != float64(ends.Unix()) || claims["nbf"] != float64(admitted.Unix()) ||
		claims["adm"] != float64(admitted.UnixMilli()) || claims["jti"] == "" || claims["iat"] == nil {
		t.Fatalf("claims %v", claims)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(p.Keys().JWKS(), &set); err != nil {
		t.Fatal(err)
	}
	tp, err := set.Keys[0].Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if kid := base64.RawURLEncoding.EncodeToString(tp); kid != set.Keys[0].KeyID || kid != p.Keys().SigningKID() {
		t.Fatalf("kid %q, thumbprint %q", set.Keys[0].KeyID, kid)
	}
	if !set.Keys[0].IsPublic() {
		t.Fatal("the JWKS publishes a private key")
	}
	// Wrong audience, too late: refused by go-jose as well.
	if _, err := joseVerify(t, p.Keys().JWKS(), tok, "other", time.Now()); err == nil {
		t.Fatal("go-jose accepted another queue")
	}
	if _, err := joseVerify(t, p.Keys().JWKS(), tok, "default", ends.Add(time.Second)); err == nil {
		t.Fatal("go-jose accepted an expired pass")
	}
	// Our own verifier reads back what was signed.
	c, err := p.Verify(tok)
	if err != nil || c.Queue != "default" || c.Subject != "a:member" || !c.AdmittedAt.Equal(admitted) || c.Expires.Unix() != ends.Unix() {
		t.Fatalf("Verify = %+v, %v", c, err)
	}
}

// Rotation as the README describes it: publish the new key (second in the
// file), then sign with it (first), then retire the old one (public half
// only, then gone). Passes signed at each step verify, with our verifier
// and with go-jose against that step's JWKS, until their key is removed.
func TestKeyRotation(t *testing.T) {
	oldKey, newKey := genPEM(t), genPEM(t)
	now := time.Now()
	admitted := time.UnixMilli(now.UnixMilli())
	issue := func(p *Passes) string {
		t.Helper()
		tok, err := p.Issue("q", "a:m", admitted, now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	kidOf := func(tok string) string {
		t.Helper()
		parsed, _, err := jwt.NewParser().ParseUnverified(tok, &claims{})
		if err != nil {
			t.Fatal(err)
		}
		return parsed.Header["kid"].(string)
	}
	accepts := func(p *Passes, tok string) bool {
		_, ours := p.Verify(tok)
		// go-jose at the time of the check, as ours: with the test's start
		// instead, a pass issued a second later (a loaded machine) reads as
		// issued in the future.
		_, theirs := joseVerify(t, p.Keys().JWKS(), tok, "q", time.Now())
		if (ours == nil) != (theirs == nil) {
			t.Fatalf("our verifier says %v, go-jose says %v", ours, theirs)
		}
		return ours == nil
	}
	jwksKids := func(p *Passes) []string {
		var set jose.JSONWebKeySet
		if err := json.Unmarshal(p.Keys().JWKS(), &set); err != nil {
			t.Fatal(err)
		}
		var kids []string
		for _, k := range set.Keys {
			kids = append(kids, k.KeyID)
		}
		return kids
	}

	step0 := ring(t, oldKey)
	oldKid := step0.Keys().SigningKID()
	p0 := issue(step0)

	step1 := ring(t, oldKey, newKey) // publish
	newKid := ring(t, newKey).Keys().SigningKID()
	if kids := jwksKids(step1); len(kids) != 2 || kids[0] != oldKid || kids[1] != newKid {
		t.Fatalf("published %v, want [%s %s]", kids, oldKid, newKid)
	}
	p1 := issue(step1)
	if kidOf(p1) != oldKid {
		t.Fatal("a published-only key signed")
	}

	step2 := ring(t, newKey, oldKey) // sign with the new key
	p2 := issue(step2)
	if kidOf(p2) != newKid {
		t.Fatal("the new key does not sign")
	}
	step3 := ring(t, newKey, publicPEM(t, oldKey)) // the old private key is gone
	step4 := ring(t, newKey)                       // retired: its passes have all expired

	for _, tc := range []struct {
		name string
		p    *Passes
		ok   map[string]bool
	}{
		{"before", step0, map[string]bool{"p0": true, "p1": true, "p2": false}},
		{"published", step1, map[string]bool{"p0": true, "p1": true, "p2": true}},
		{"signing", step2, map[string]bool{"p0": true, "p1": true, "p2": true}},
		{"old public only", step3, map[string]bool{"p0": true, "p1": true, "p2": true}},
		{"retired", step4, map[string]bool{"p0": false, "p1": false, "p2": true}},
	} {
		for name, tok := range map[string]string{"p0": p0, "p1": p1, "p2": p2} {
			if got := accepts(tc.p, tok); got != tc.ok[name] {
				t.Errorf("step %q: pass %s accepted = %v, want %v", tc.name, name, got, tc.ok[name])
			}
		}
	}
	if step3.Keys().SigningKID() != newKid {
		t.Fatal("a public key cannot sign")
	}
}

func TestParseKeysRefuses(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	ecPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	for name, data := range map[string][]byte{
		"empty":            nil,
		"not PEM":          []byte("hello"),
		"public key only":  publicPEM(t, genPEM(t)),
		"P-256 key":        ecPEM,
		"certificate type": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}),
		"broken DER":       pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}}),
	} {
		if _, err := ParseKeys(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Tokens that are not passes of this issuer and ring are refused, and
// say why.
func TestVerifyRefuses(t *testing.T) {
	p := ring(t, genPEM(t))
	now := time.Now()
	good, err := p.Issue("q", "a:m", now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	otherIssuer, _ := New(p.Keys(), "https://evil.test")
	fromOther, _ := otherIssuer.Issue("q", "a:m", now, now.Add(time.Hour))
	// Algorithm confusion: HS256 keyed with the public key's bytes.
	var set struct {
		Keys []struct {
			X, Kid string
		} `json:"keys"`
	}
	_ = json.Unmarshal(p.Keys().JWKS(), &set)
	pubBytes, _ := base64.RawURLEncoding.DecodeString(set.Keys[0].X)
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": issuer, "aud": "q", "sub": "a:m", "exp": now.Add(time.Hour).Unix(), "nbf": now.Unix(), "adm": now.UnixMilli()})
	hs.Header["kid"] = set.Keys[0].Kid
	confused, _ := hs.SignedString(pubBytes)
	missingAdm := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"iss": issuer, "aud": "q", "sub": "a:m", "exp": now.Add(time.Hour).Unix(), "nbf": now.Unix()})
	missingAdm.Header["kid"] = p.Keys().SigningKID()
	noAdm, _ := missingAdm.SignedString(p.Keys().signing.priv)
	arrayAud := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"iss": issuer, "aud": []string{"q"}, "sub": "a:m", "exp": now.Add(time.Hour).Unix(), "nbf": now.Unix(), "adm": now.UnixMilli()})
	arrayAud.Header["kid"] = p.Keys().SigningKID()
	arr, _ := arrayAud.SignedString(p.Keys().signing.priv)

	if _, err := p.Verify(good); err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"another issuer":       fromOther,
		"HS256 with the key":   confused,
		"no adm":               noAdm,
		"aud not a string":     arr,
		"truncated":            good[:len(good)-10],
		"two dots only":        "..",
		"payload from another": strings.Join([]string{strings.Split(good, ".")[0], strings.Split(fromOther, ".")[1], strings.Split(good, ".")[2]}, "."),
	} {
		if _, err := p.Verify(tok); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Verify = %v, want ErrInvalid", name, err)
		}
	}
}

// respellings are the other spellings of seg (unpadded base64url) that a
// lenient decoder reads as the same bytes: its last character with other
// values in the bits that carry no data, 2^unused - 1 of them.
func respellings(t *testing.T, seg string) []string {
	t.Helper()
	want, err := base64.RawURLEncoding.Strict().DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var out []string
	for _, c := range alphabet {
		alt := seg[:len(seg)-1] + string(c)
		if got, err := base64.RawURLEncoding.DecodeString(alt); alt != seg && err == nil && bytes.Equal(got, want) {
			out = append(out, alt)
		}
	}
	if n := 1<<(6*len(seg)-8*len(want)) - 1; len(out) != n {
		t.Fatalf("%d respellings of %q, want %d", len(out), seg, n)
	}
	return out
}

// A pass has one spelling. Every other spelling of its signature (the 15
// values of the 4 unused bits of an Ed25519 signature's last character),
// which the parser without strict decoding accepts, and line breaks,
// which encoding/base64 skips even when strict, are refused. The remote
// verifier of the gate package is this one (NewVerifier).
func TestVerifyRefusesOtherSpellings(t *testing.T) {
	p := ring(t, genPEM(t))
	now := time.Now()
	good, err := p.Issue("q", "a:m", now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Verify(good); err != nil {
		t.Fatal(err)
	}
	// The parser as NewVerifier built it before it decoded strictly.
	lenient := jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}), jwt.WithIssuer(issuer),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(Leeway))
	cut := strings.LastIndexByte(good, '.') + 1
	for _, sig := range respellings(t, good[cut:]) {
		tok := good[:cut] + sig
		if _, err := lenient.ParseWithClaims(tok, &claims{}, p.keys.key); err != nil {
			t.Fatalf("the lenient parser refused %q: %v", tok, err)
		}
		if _, err := p.Verify(tok); !errors.Is(err, ErrInvalid) {
			t.Errorf("respelled signature %q: Verify = %v, want ErrInvalid", sig, err)
		}
	}
	for name, tok := range map[string]string{
		"LF at the end":          good + "\n",
		"CR LF in the signature": good[:cut+10] + "\r\n" + good[cut+10:],
		"LF before the last":     good[:len(good)-1] + "\n" + good[len(good)-1:],
	} {
		if _, err := lenient.ParseWithClaims(tok, &claims{}, p.keys.key); err != nil {
			t.Fatalf("%s: the lenient parser refused it: %v", name, err)
		}
		if _, err := p.Verify(tok); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Verify = %v, want ErrInvalid", name, err)
		}
	}
}

type admissions map[string]time.Time

func (a admissions) Current(_ context.Context, queue, member string, start time.Time) (bool, error) {
	t, ok := a[queue+"/"+member]
	return ok && t.Equal(start), nil
}

// Check refuses a valid pass whose admission is no longer the member's
// current one, and passes the store's errors through.
func TestCheckSeesRevocation(t *testing.T) {
	p := ring(t, genPEM(t))
	now := time.UnixMilli(time.Now().UnixMilli())
	tok, _ := p.Issue("q", "a:m", now, now.Add(time.Hour))
	ctx := context.Background()
	if _, err := p.Check(ctx, tok, admissions{"q/a:m": now}); err != nil {
		t.Fatalf("current admission: %v", err)
	}
	for name, adm := range map[string]admissions{
		"no admission":    {},
		"a later one":     {"q/a:m": now.Add(time.Millisecond)},
		"another queue's": {"r/a:m": now},
	} {
		if _, err := p.Check(ctx, tok, adm); !errors.Is(err, ErrRevoked) {
			t.Errorf("%s: %v, want ErrRevoked", name, err)
		}
	}
	down := errors.New("redis down")
	if _, err := p.Check(ctx, tok, failing{down}); !errors.Is(err, down) || errors.Is(err, ErrInvalid) {
		t.Errorf("store error: %v", err)
	}
}

type failing struct{ err error }

func (f failing) Current(context.Context, string, string, time.Time) (bool, error) {
	return false, f.err
}

// UnverifiedClaims reads what Verify reads, from any token shaped like a
// pass, signed or not: that is its point and its hazard.
func TestUnverifiedClaims(t *testing.T) {
	p := ring(t, genPEM(t))
	now := time.Now()
	good, err := p.Issue("q", "a:m", now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.Verify(good)
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnverifiedClaims(good)
	if err != nil || got != want {
		t.Fatalf("UnverifiedClaims = %+v, %v; Verify = %+v", got, err, want)
	}
	if got.AdmittedAt.UnixMilli() != now.UnixMilli() {
		t.Fatalf("adm %d, want %d", got.AdmittedAt.UnixMilli(), now.UnixMilli())
	}

	// Signed by nobody the ring knows: read all the same.
	forged, _ := ring(t, genPEM(t)).Issue("q", "a:other", now, now.Add(time.Hour))
	if c, err := UnverifiedClaims(forged); err != nil || c.Subject != "a:other" {
		t.Fatalf("forged: %+v, %v", c, err)
	}
	if _, err := p.Verify(forged); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Verify took the forged pass: %v", err)
	}

	noAdm, _ := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"aud": "q", "sub": "a:m", "nbf": now.Unix()}).
		SignedString(p.Keys().signing.priv)
	for name, tok := range map[string]string{"not a JWT": "nope", "two dots only": "..", "no adm": noAdm} {
		if _, err := UnverifiedClaims(tok); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}
