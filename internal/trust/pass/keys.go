package pass

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/golang-jwt/jwt/v5"
)

// Keys is the ring of Ed25519 keys: the one that signs new passes and
// every key whose passes are still accepted and published in the JWKS.
//
// Rotation is publish, then sign, then retire (README, "Rotating the
// signing key"): a key goes into the ring, and so into the JWKS, before it
// signs, and stays until every pass it signed has expired.
type Keys struct {
	signing *key
	byKID   map[string]*key
	jwks    []byte
}

type key struct {
	kid  string
	pub  ed25519.PublicKey
	priv ed25519.PrivateKey // nil for a key that is only published
}

// ParseKeys reads a ring from PEM: any number of "PRIVATE KEY" (PKCS #8)
// and "PUBLIC KEY" (PKIX) blocks of Ed25519 keys. The first private key
// signs; every key is published and verifies. A public key alone is how a
// retired key stays published after its private half is gone.
func ParseKeys(data []byte) (*Keys, error) {
	k := &Keys{byKID: map[string]*key{}}
	var order []*key
	for n := 1; ; n++ {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		kk, err := parseBlock(block)
		if err != nil {
			return nil, fmt.Errorf("pass: PEM block %d: %w", n, err)
		}
		if old, dup := k.byKID[kk.kid]; dup {
			// The same key as a private and a public block: keep the private.
			if old.priv == nil {
				old.priv = kk.priv
			}
		} else {
			k.byKID[kk.kid] = kk
			order = append(order, kk)
		}
		if k.signing == nil && kk.priv != nil {
			k.signing = k.byKID[kk.kid]
		}
	}
	if k.signing == nil {
		return nil, errors.New("pass: no Ed25519 private key (PEM \"PRIVATE KEY\", PKCS #8) to sign with")
	}
	jwks, err := marshalJWKS(order)
	if err != nil {
		return nil, err
	}
	k.jwks = jwks
	return k, nil
}

func parseBlock(b *pem.Block) (*key, error) {
	switch b.Type {
	case "PRIVATE KEY":
		v, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		if err != nil {
			return nil, err
		}
		priv, ok := v.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("a %T, not an Ed25519 key", v)
		}
		pub := priv.Public().(ed25519.PublicKey)
		return &key{kid: thumbprint(pub), pub: pub, priv: priv}, nil
	case "PUBLIC KEY":
		v, err := x509.ParsePKIXPublicKey(b.Bytes)
		if err != nil {
			return nil, err
		}
		pub, ok := v.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("a %T, not an Ed25519 key", v)
		}
		return &key{kid: thumbprint(pub), pub: pub}, nil
	default:
		return nil, fmt.Errorf("type %q; want PRIVATE KEY or PUBLIC KEY", b.Type)
	}
}

// GenerateKeyPEM returns a new Ed25519 private key as PKCS #8 PEM, the
// format ParseKeys and WAITROOM_SIGNING_KEY_FILE take (the same as
// `openssl genpkey -algorithm ed25519`).
func GenerateKeyPEM() ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// JWKS returns the public keys as a JSON Web Key Set (RFC 7517, with the
// Ed25519 "OKP" key type of RFC 8037), in the order of the PEM.
func (k *Keys) JWKS() []byte { return k.jwks }

// key finds the public key named by a token's kid (a jwt.Keyfunc).
func (k *Keys) key(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	kk, ok := k.byKID[kid]
	if !ok {
		return nil, fmt.Errorf("unknown kid %q", kid)
	}
	return kk.pub, nil
}

// SigningKID is the key id of the key that signs new passes.
func (k *Keys) SigningKID() string { return k.signing.kid }

type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

func marshalJWKS(keys []*key) ([]byte, error) {
	set := struct {
		Keys []jwk `json:"keys"`
	}{}
	for _, k := range keys {
		set.Keys = append(set.Keys, jwk{Kty: "OKP", Crv: "Ed25519", X: b64(k.pub), Kid: k.kid, Alg: "EdDSA", Use: "sig"})
	}
	return json.Marshal(set)
}

// thumbprint is the key's JWK thumbprint (RFC 7638), used as its kid: the
// same key gets the same kid on every replica and after every restart.
func thumbprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + b64(pub) + `"}`))
	return b64(sum[:])
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
