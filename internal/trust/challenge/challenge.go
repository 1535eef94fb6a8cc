// Package challenge is the proof of work a queue may ask for before
// entering (challenge_difficulty): a stateless, server-signed, expiring
// challenge, and the check of a solution. The protocol, exact so that any
// client can implement it:
//
//   - GET /api/v1/queues/{queue}/challenge answers
//     {"challenge", "difficulty", "expires_at"}.
//   - A solution is a nonce (1 to MaxNonce printable ASCII characters)
//     such that SHA-256(challenge + ":" + nonce) starts with difficulty
//     zero bits.
//   - Enter sends {"challenge", "nonce"} in its body.
//
// Issuing costs the server an HMAC and nothing in Redis; a solution is
// used once (the store marks its id in enter.lua). A solution costs the
// client 2^difficulty hashes on average, the server one.
package challenge

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// TTL is how long a challenge is accepted: long enough for a slow phone
// at the recommended difficulty, short enough that a stockpile goes stale.
const TTL = 5 * time.Minute

// A challenge harder than a slow phone solves well within TTL lives
// longer: at least three times its expected time at slowHashRate, up to
// MaxTTL. The price of a place (queue/price.go) can ask a network that
// holds many places for 2^28 hashes or more, hours in a browser; a person
// behind such a network (an office, a carrier's NAT) must still be able
// to finish. A long-lived challenge buys an attacker nothing: each is
// used once and cost what it asked.
const (
	slowHashRate = 20_000 // hashes a second: a slow phone's WebCrypto
	MaxTTL       = 24 * time.Hour
)

// TTLFor is how long a challenge at difficulty is accepted.
func TTLFor(difficulty int) time.Duration {
	if difficulty >= 40 {
		return MaxTTL
	}
	expected := time.Duration(float64(int64(1)<<max(0, difficulty)) / slowHashRate * float64(time.Second))
	return min(MaxTTL, max(TTL, 3*expected))
}

// MaxNonce bounds a nonce's length: every solution needs far fewer
// characters (a decimal counter), and the check hashes it.
const MaxNonce = 64

// ErrInvalid is any challenge or solution that does not check: forged,
// for another queue, expired, malformed, or not enough zero bits.
var ErrInvalid = errors.New("challenge: invalid or expired challenge, or wrong solution")

// Challenges issues and checks challenges with one key, shared by every
// replica (the secrets package keeps it in Redis).
type Challenges struct {
	key []byte
	now func() time.Time
}

// New returns Challenges keyed with secret (32 bytes or more).
func New(secret []byte) (*Challenges, error) {
	if len(secret) < 32 {
		return nil, errors.New("challenge: secret must be at least 32 bytes")
	}
	return &Challenges{key: secret, now: time.Now}, nil
}

// enc is strict, so a challenge's MAC has one spelling (CR and LF, which
// encoding/base64 skips in any mode, are refused by Check).
var enc = base64.RawURLEncoding.Strict()

// Issue returns a new challenge for queue at difficulty and when it
// expires (TTLFor): "c1.<queue>.<difficulty>.<expires, unix ms>.<id>.<mac>", where
// id is 128 random bits and mac an HMAC-SHA256 of everything before it.
func (c *Challenges) Issue(queueName string, difficulty int) (string, time.Time) {
	var id [16]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	expires := c.now().Add(TTLFor(difficulty)).Truncate(time.Millisecond)
	body := "c1." + queueName + "." + strconv.Itoa(difficulty) + "." + strconv.FormatInt(expires.UnixMilli(), 10) + "." + enc.EncodeToString(id[:])
	return body + "." + enc.EncodeToString(c.mac(body)), expires
}

func (c *Challenges) mac(body string) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

// Check verifies nonce as a solution of challenge for queueName and returns
// the proof the store makes single-use. The difficulty in the proof is the
// challenge's: the store refuses it if the queue now asks for more.
func (c *Challenges) Check(queueName, challenge, nonce string) (queue.Proof, error) {
	parts := strings.Split(challenge, ".")
	if len(parts) != 6 || parts[0] != "c1" || parts[1] != queueName || len(nonce) == 0 || len(nonce) > MaxNonce ||
		strings.ContainsAny(challenge, "\r\n") {
		return queue.Proof{}, ErrInvalid
	}
	for i := 0; i < len(nonce); i++ {
		if nonce[i] < 0x21 || nonce[i] > 0x7e {
			return queue.Proof{}, ErrInvalid
		}
	}
	mac, err := enc.DecodeString(parts[5])
	if err != nil || !hmac.Equal(mac, c.mac(challenge[:len(challenge)-len(parts[5])-1])) {
		return queue.Proof{}, ErrInvalid
	}
	difficulty, err1 := strconv.Atoi(parts[2])
	ms, err2 := strconv.ParseInt(parts[3], 10, 64)
	expires := time.UnixMilli(ms)
	if err1 != nil || err2 != nil || !c.now().Before(expires) {
		return queue.Proof{}, ErrInvalid
	}
	if LeadingZeroBits(challenge, nonce) < difficulty {
		return queue.Proof{}, ErrInvalid
	}
	return queue.Proof{ID: parts[4], Difficulty: difficulty, Expires: expires}, nil
}

// LeadingZeroBits counts the zero bits that SHA-256(challenge ":" nonce)
// starts with.
func LeadingZeroBits(challenge, nonce string) int {
	sum := sha256.Sum256([]byte(challenge + ":" + nonce))
	n := 0
	for _, b := range sum {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

// Stated is the difficulty challenge says it was issued at, read without
// checking its MAC: what a client holding only the challenge must solve.
// ok is false for anything not shaped like a challenge.
func Stated(challenge string) (difficulty int, ok bool) {
	parts := strings.Split(challenge, ".")
	if len(parts) != 6 || parts[0] != "c1" {
		return 0, false
	}
	d, err := strconv.Atoi(parts[2])
	if err != nil || d < 0 || strconv.Itoa(d) != parts[2] {
		return 0, false
	}
	return d, true
}

// Solve finds a nonce for challenge at difficulty by counting up, as the
// waiting page's worker does: `waitroom solve` (a shell's way to pay what
// a browser's worker pays), the tests, and measuring what a solution
// costs. It expects 2^difficulty hashes and does not stop before it finds
// one, so a caller bounds difficulty.
func Solve(challenge string, difficulty int) string {
	for i := 0; ; i++ {
		nonce := strconv.Itoa(i)
		if LeadingZeroBits(challenge, nonce) >= difficulty {
			return nonce
		}
	}
}
