// Package invite makes and reads invitation codes: codes an operator hands
// to invited customers, each putting its bringer's place in a lane
// (queue.Store.Redeem spends them). It knows the codes' shape and their
// keyed digests, the only form in which they reach Redis, and guards the
// enter against guessing (Guard): wrong codes are counted per address and
// per network, and a client that keeps guessing is locked out.
//
// A made code is 12 characters of a 31-letter alphabet without look-alikes
// (no 0 or O, no 1, I or L), shown in groups of four ("K7QM-X2RD-9WHT"):
// about 59 bits, so 10,000 guesses against a million live codes find one
// with a chance of about 1 in 80 million, before the guard stops them at a
// few dozen. An operator's own codes (an upload) are read the same way:
// case, spaces and hyphens do not matter.
package invite

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// Alphabet is the made codes' letters: digits and capitals without those
// a person mistakes for one another (0 O, 1 I L).
const Alphabet = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"

const (
	// Length is a made code's characters (without its hyphens).
	Length = 12
	// group is how many characters a made code shows between hyphens.
	group = 4
	// MinLength and MaxLength bound a code as read (without spaces and
	// hyphens): an upload's codes, and what a visitor types.
	MinLength, MaxLength = 8, 64
	// MaxInputBytes bounds what is read as a code before normalizing it:
	// MaxLength with a space or hyphen between each character.
	MaxInputBytes = 2 * MaxLength
)

// ErrShape refuses an upload's code that is not 8 to 64 letters and
// digits (spaces and hyphens aside).
var ErrShape = errors.New("invite: a code is 8 to 64 letters and digits (spaces and hyphens aside)")

// Normalize is code as the digests read it: ASCII capitals and digits,
// spaces and hyphens dropped. ok is false for anything else, or a length
// out of MinLength..MaxLength.
func Normalize(code string) (string, bool) {
	if len(code) > MaxInputBytes {
		return "", false
	}
	var b strings.Builder
	b.Grow(len(code))
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch {
		case c == ' ' || c == '-':
			continue
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		default:
			return "", false
		}
		b.WriteByte(c)
	}
	n := b.Len()
	if n < MinLength || n > MaxLength {
		return "", false
	}
	return b.String(), true
}

// Codes makes codes and digests them under a key derived from the
// service's secret.
type Codes struct {
	key []byte
}

// New returns the codes keyed from secret (WAITROOM_SECRET, or the shared
// generated one): a key of their own, derived, so a digest says nothing
// of the place credentials' key and the other way round.
func New(secret []byte) (*Codes, error) {
	if len(secret) == 0 {
		return nil, errors.New("invite: need a secret")
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("waitroom invitation code key v1"))
	return &Codes{key: m.Sum(nil)}, nil
}

// Digest is code's keyed digest in queue (HMAC-SHA-256 of the queue and
// the normalized code, its first 128 bits): what the store keeps and
// looks up. ok is false when code is not a code's shape (Normalize).
func (c *Codes) Digest(queue, code string) (string, bool) {
	n, ok := Normalize(code)
	if !ok {
		return "", false
	}
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(queue))
	m.Write([]byte{0})
	m.Write([]byte(n))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16]), true
}

// Digests are codes' digests in queue, in order; ErrShape names none of
// them (an upload's error must not echo a customer's code).
func (c *Codes) Digests(queue string, codes []string) ([]string, error) {
	out := make([]string, len(codes))
	for i, code := range codes {
		d, ok := c.Digest(queue, code)
		if !ok {
			return nil, ErrShape
		}
		out[i] = d
	}
	return out, nil
}

// Make returns n fresh codes, each Length characters of Alphabet from
// crypto/rand, shown in groups of four.
func Make(n int) []string {
	out := make([]string, n)
	buf := make([]byte, 64)
	used := len(buf)
	next := func() byte {
		for {
			if used == len(buf) {
				_, _ = rand.Read(buf) // never fails (crypto/rand)
				used = 0
			}
			b := buf[used]
			used++
			// 31 × 8 = 248: bytes from 248 up would favour the first letters.
			if b < 248 {
				return Alphabet[b%31]
			}
		}
	}
	for i := range out {
		var b strings.Builder
		for j := 0; j < Length; j++ {
			if j > 0 && j%group == 0 {
				b.WriteByte('-')
			}
			b.WriteByte(next())
		}
		out[i] = b.String()
	}
	return out
}
