package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries a delivery's signature: "t=<unix seconds>,v1=<hex>",
// the hex HMAC-SHA256, under the webhook secret, of the decimal timestamp,
// a dot and the raw body. The timestamp is signed with the body, so a
// receiver that refuses old timestamps refuses replays.
const SignatureHeader = "Waitroom-Signature"

// MinSecretBytes is the shortest WAITROOM_WEBHOOK_SECRET accepted, like
// waitroom's other secrets.
const MinSecretBytes = 32

// Tolerance is how old a signature's timestamp a receiver should accept
// (docs/WEBHOOKS.md's receivers refuse older ones).
const Tolerance = 5 * time.Minute

// Sign returns the SignatureHeader value of body sent at t.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// ErrSignature is Verify's answer to a signature that is missing, malformed,
// wrong or too old.
var ErrSignature = errors.New("webhook: bad or old signature")

// MaxTimestampDigits bounds a signature's timestamp: enough for any
// time within tolerance, and a receiver parses no longer number (Python's
// int() refuses past 4,300 digits: a 500).
const MaxTimestampDigits = 12

// Verify checks header (a SignatureHeader value) against body: a v1
// signature by secret, its timestamp within tolerance of now. It is what a
// receiver does, and what docs/WEBHOOKS.md's two receivers do, rule for rule
// (TestReceiversGenerated): the header is split at commas and each part at
// its first "=", keys as they are; the last t must be 1 to
// MaxTimestampDigits ASCII digits; any v1 may match, compared as the
// lowercase hex string, in constant time, as bytes.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseUint(ts, 10, 64) // digits only: no sign
	if err != nil || len(ts) > MaxTimestampDigits {
		return ErrSignature
	}
	if d := now.Sub(time.Unix(int64(sec), 0)); d > tolerance || d < -tolerance {
		return ErrSignature
	}
	want := []byte(hex.EncodeToString(mac(secret, ts, body)))
	for _, s := range sigs {
		if hmac.Equal([]byte(s), want) {
			return nil
		}
	}
	return ErrSignature
}
