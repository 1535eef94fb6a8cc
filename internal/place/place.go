// Package place owns the proof that a place in line belongs to whoever
// holds it: the place credential, a value the server signs that names the
// queue and the member id holding the place. The member id is what the
// queue store keys the place by; only the server chooses it (NewMember) or
// derives it from a site's signed join token (join.go), so a caller can no
// longer name somebody else's place.
package place

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"strings"
	"sync"
)

// MinSecretBytes is the shortest secret New accepts: an HMAC-SHA256 key
// should carry at least the hash's 256 bits.
const MinSecretBytes = 32

// CookiePrefix starts the name of the cookie that carries a queue's
// credential in browsers: CookiePrefix + queue.
const CookiePrefix = "wr_place_"

// CookieName is the name of queue's credential cookie.
func CookieName(queue string) string { return CookiePrefix + queue }

// ErrInvalid means a credential is missing, malformed, forged, or for
// another queue.
var ErrInvalid = errors.New("place: invalid place credential")

// version starts every credential, so the format can change later
// without old credentials being misread.
const version = "v1"

var b64 = base64.RawURLEncoding.Strict()

// Credentials issues and verifies place credentials with one secret.
type Credentials struct {
	// macs holds HMAC-SHA256 states keyed with the secret: hmac.New costs
	// two allocations and two hash blocks, on every enter and status.
	macs sync.Pool
}

// New returns credentials signed with secret (at least MinSecretBytes).
func New(secret []byte) (*Credentials, error) {
	if len(secret) < MinSecretBytes {
		return nil, errors.New("place: secret must be at least 32 bytes")
	}
	key := append([]byte(nil), secret...)
	c := &Credentials{}
	c.macs.New = func() any { return hmac.New(sha256.New, key) }
	return c, nil
}

// NewMember returns a fresh member id for a place: 128 random bits, so
// nobody can guess another's. The "a:" prefix keeps such ids apart from
// the ids of join tokens ("u:").
func NewMember() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "a:" + b64.EncodeToString(b[:])
}

// Issue returns the credential for member's place in queue:
// "v1.<queue>.<member, base64url>.<HMAC-SHA256, base64url>".
func (c *Credentials) Issue(queue, member string) string {
	var mac [sha256.Size]byte
	c.sign(mac[:0], queue, member)
	b := make([]byte, 0, len(version)+len(queue)+b64.EncodedLen(len(member))+b64.EncodedLen(len(mac))+3)
	b = append(b, version...)
	b = append(b, '.')
	b = append(b, queue...)
	b = append(b, '.')
	b = b64.AppendEncode(b, []byte(member))
	b = append(b, '.')
	b = b64.AppendEncode(b, mac[:])
	return string(b)
}

// Verify returns the member whose place in queue token proves, or
// ErrInvalid. The comparison of signatures takes constant time.
func (c *Credentials) Verify(queue, token string) (string, error) {
	rest, ok := strings.CutPrefix(token, version+".")
	if !ok {
		return "", ErrInvalid
	}
	q, rest, ok := strings.Cut(rest, ".")
	if !ok || q != queue {
		return "", ErrInvalid
	}
	encMember, encMAC, ok := strings.Cut(rest, ".")
	if !ok || len(encMember) > 1024 {
		return "", ErrInvalid
	}
	var got [sha256.Size]byte
	if b64.DecodedLen(len(encMAC)) != len(got) {
		return "", ErrInvalid
	}
	if _, err := b64.Decode(got[:], []byte(encMAC)); err != nil {
		return "", ErrInvalid
	}
	var buf [128]byte // a member id is at most 128 bytes in the store
	member, err := b64.AppendDecode(buf[:0], []byte(encMember))
	if err != nil || len(member) == 0 {
		return "", ErrInvalid
	}
	var want [sha256.Size]byte
	if !hmac.Equal(got[:], c.sign(want[:0], queue, string(member))) {
		return "", ErrInvalid
	}
	return string(member), nil
}

// sign appends the MAC of (queue, member) to b. The NUL bytes keep the
// fields apart: no queue name or member id contains one. The message is
// written in one piece (each Write through the hash interface copies its
// argument to the heap).
func (c *Credentials) sign(b []byte, queue, member string) []byte {
	const prefix = "waitroom place\x00"
	var buf [256]byte
	msg := append(buf[:0], prefix...)
	msg = append(msg, queue...)
	msg = append(msg, 0)
	msg = append(msg, member...)
	m := c.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(msg)
	b = m.Sum(b)
	c.macs.Put(m)
	return b
}
