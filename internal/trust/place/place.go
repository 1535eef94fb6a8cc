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
	"strconv"
	"strings"
	"sync"
)

// MinSecretBytes is the shortest secret New accepts: an HMAC-SHA256 key
// should carry at least the hash's 256 bits.
const MinSecretBytes = 32

// CookiePrefix starts the name of the cookie that carries a queue's
// credential in browsers: CookiePrefix(secure) + queue.
func CookiePrefix(secure bool) string {
	if secure {
		// Browsers take a __Host- cookie only if it is Secure, host-only
		// and for the whole site: another subdomain or a plain-http answer
		// cannot plant one.
		return "__Host-wr_place_"
	}
	return "wr_place_"
}

// CookieName is the name of queue's credential cookie:
// __Host-wr_place_{queue}, or wr_place_{queue} when the cookie is not
// Secure (local development only).
func CookieName(queue string, secure bool) string { return CookiePrefix(secure) + queue }

// ErrInvalid means a credential is missing, malformed, forged, or for
// another queue.
var ErrInvalid = errors.New("place: invalid place credential")

// Credential versions: v2 carries the place's arrival number in the line
// as well; v1 credentials, issued before it, are still accepted (their
// arrival number is unknown, 0). v3 carries the place's generation too:
// issued when a place moved to another device (internal/trust/handoff), whose
// older credentials then stop working; a v1 or v2 credential is of
// generation 0.
const (
	version1 = "v1"
	version  = "v2"
	version3 = "v3"
)

// Place is what a verified credential proves.
type Place struct {
	Member string
	Seq    int64 // the arrival number in the line (0: not known)
	Gen    int64 // the generation: how often the place had moved when it was issued
}

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

// Issue returns the credential for member's place in queue, at arrival
// number seq in the line (0: not in the line, or not known):
// "v2.<queue>.<member, base64url>.<seq>.<HMAC-SHA256, base64url>". The
// arrival number lets a replica place the holder in the line from its
// snapshot (queue.Caller.Seq); it is signed, so a holder cannot move
// itself forward on the page.
func (c *Credentials) Issue(queue, member string, seq int64) string {
	return c.IssueGen(queue, member, seq, 0)
}

// IssueGen is Issue for a place of generation gen (internal/trust/handoff): a
// v3 credential "v3.<queue>.<member>.<seq>.<gen>.<MAC>" when gen > 0, the
// v2 one of Issue otherwise.
func (c *Credentials) IssueGen(queue, member string, seq, gen int64) string {
	ver := version
	if gen > 0 {
		ver = version3
	}
	var mac [sha256.Size]byte
	c.sign(mac[:0], ver, queue, member, seq, gen)
	b := make([]byte, 0, len(version)+len(queue)+b64.EncodedLen(len(member))+40+b64.EncodedLen(len(mac))+5)
	b = append(b, ver...)
	b = append(b, '.')
	b = append(b, queue...)
	b = append(b, '.')
	b = b64.AppendEncode(b, []byte(member))
	b = append(b, '.')
	b = strconv.AppendInt(b, seq, 10)
	if ver == version3 {
		b = append(b, '.')
		b = strconv.AppendInt(b, gen, 10)
	}
	b = append(b, '.')
	b = b64.AppendEncode(b, mac[:])
	return string(b)
}

// Verify returns the member whose place in queue token proves, and the
// arrival number it carries (0 for a v1 credential), or ErrInvalid. The
// comparison of signatures takes constant time.
func (c *Credentials) Verify(queue, token string) (member string, seq int64, err error) {
	p, err := c.VerifyPlace(queue, token)
	return p.Member, p.Seq, err
}

// VerifyPlace is Verify with the place's generation (0 for v1 and v2).
func (c *Credentials) VerifyPlace(queue, token string) (Place, error) {
	member, seq, gen, err := c.verify(queue, token)
	return Place{Member: member, Seq: seq, Gen: gen}, err
}

// number reads one spelling of a non-negative decimal: digits, no sign,
// no leading zero.
func number(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 || (len(s) > 1 && s[0] == '0') || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func (c *Credentials) verify(queue, token string) (member string, seq, gen int64, err error) {
	// A credential has one spelling: b64 is strict about the unused bits
	// of a last character, but skips CR and LF in any mode.
	if strings.ContainsAny(token, "\r\n") {
		return "", 0, 0, ErrInvalid
	}
	ver, rest, ok := strings.Cut(token, ".")
	if !ok || (ver != version && ver != version1 && ver != version3) {
		return "", 0, 0, ErrInvalid
	}
	q, rest, ok := strings.Cut(rest, ".")
	if !ok || q != queue {
		return "", 0, 0, ErrInvalid
	}
	encMember, rest, ok := strings.Cut(rest, ".")
	if !ok || len(encMember) > 1024 {
		return "", 0, 0, ErrInvalid
	}
	encMAC := rest
	if ver != version1 {
		var encSeq string
		if encSeq, encMAC, ok = strings.Cut(rest, "."); !ok {
			return "", 0, 0, ErrInvalid
		}
		if seq, ok = number(encSeq); !ok {
			return "", 0, 0, ErrInvalid
		}
	}
	if ver == version3 {
		var encGen string
		if encGen, encMAC, ok = strings.Cut(encMAC, "."); !ok {
			return "", 0, 0, ErrInvalid
		}
		// A v3 credential is for a place that moved: generation 1 on.
		if gen, ok = number(encGen); !ok || gen == 0 {
			return "", 0, 0, ErrInvalid
		}
	}
	var got [sha256.Size]byte
	if b64.DecodedLen(len(encMAC)) != len(got) {
		return "", 0, 0, ErrInvalid
	}
	if _, err := b64.Decode(got[:], []byte(encMAC)); err != nil {
		return "", 0, 0, ErrInvalid
	}
	var buf [128]byte // a member id is at most 128 bytes in the store
	m, err := b64.AppendDecode(buf[:0], []byte(encMember))
	if err != nil || len(m) == 0 {
		return "", 0, 0, ErrInvalid
	}
	var want [sha256.Size]byte
	if !hmac.Equal(got[:], c.sign(want[:0], ver, queue, string(m), seq, gen)) {
		return "", 0, 0, ErrInvalid
	}
	return string(m), seq, gen, nil
}

// sign appends the MAC of a credential of version ver to b: (queue,
// member) for v1, (queue, member, seq) for v2, (queue, member, seq, gen)
// for v3. The NUL bytes keep the
// fields apart: no queue name or member id contains one. The message is
// written in one piece (each Write through the hash interface copies its
// argument to the heap).
func (c *Credentials) sign(b []byte, ver, queue, member string, seq, gen int64) []byte {
	var buf [256]byte
	msg := append(buf[:0], "waitroom place"...)
	if ver != version1 {
		msg = append(msg, ' ')
		msg = append(msg, ver...)
	}
	msg = append(msg, 0)
	msg = append(msg, queue...)
	msg = append(msg, 0)
	msg = append(msg, member...)
	if ver != version1 {
		msg = append(msg, 0)
		msg = strconv.AppendInt(msg, seq, 10)
	}
	if ver == version3 {
		msg = append(msg, 0)
		msg = strconv.AppendInt(msg, gen, 10)
	}
	m := c.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(msg)
	b = m.Sum(b)
	c.macs.Put(m)
	return b
}
