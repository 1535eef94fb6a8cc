package place

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
)

func newCreds(t *testing.T, secret string) *Credentials {
	t.Helper()
	c, err := New([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var secretA = strings.Repeat("a", MinSecretBytes)

func TestCredentialRoundTrip(t *testing.T) {
	c := newCreds(t, secretA)
	for i, member := range []string{NewMember(), "u:alice", "u:김철수 🎫", "plain-id"} {
		seq := int64([]int{0, 1, 1234567, 1 << 53}[i])
		tok := c.Issue("default", member, seq)
		if !strings.HasPrefix(tok, "v2.default.") {
			t.Fatalf("credential %q does not name its queue", tok)
		}
		got, gotSeq, err := c.Verify("default", tok)
		if err != nil || got != member || gotSeq != seq {
			t.Fatalf("Verify(%q) = %q, %d, %v; want %q, %d", tok, got, gotSeq, err, member, seq)
		}
	}
}

// issueV1 is a credential as issued before the arrival number: the same
// MAC state, over (queue, member).
func issueV1(c *Credentials, queue, member string) string {
	var mac [32]byte
	enc := base64.RawURLEncoding.EncodeToString
	return "v1." + queue + "." + enc([]byte(member)) + "." + enc(c.sign(mac[:0], version1, queue, member, 0, 0))
}

// A v1 credential (issued before the arrival number) still proves its
// place, with no arrival number; it cannot be made into a v2 one.
func TestCredentialV1StillAccepted(t *testing.T) {
	c := newCreds(t, secretA)
	tok := issueV1(c, "default", "a:AAAAAAAAAAAAAAAAAAAAAA")
	m, seq, err := c.Verify("default", tok)
	if err != nil || m != "a:AAAAAAAAAAAAAAAAAAAAAA" || seq != 0 {
		t.Fatalf("v1: %q, %d, %v", m, seq, err)
	}
	p := strings.Split(tok, ".")
	for _, bad := range []string{
		strings.Join([]string{"v2", p[1], p[2], "0", p[3]}, "."),
		strings.Join([]string{"v2", p[1], p[2], "7", p[3]}, "."),
	} {
		if _, _, err := c.Verify("default", bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("v1 MAC under v2: %q verified", bad)
		}
	}
}

// Any change to a credential, another queue or another secret makes it
// invalid; so does any other spelling of its arrival number.
func TestCredentialRefuses(t *testing.T) {
	c := newCreds(t, secretA)
	tok := c.Issue("default", "a:AAAAAAAAAAAAAAAAAAAAAA", 42)
	p := strings.Split(tok, ".")
	enc := base64.RawURLEncoding.EncodeToString
	join := func(parts ...string) string { return strings.Join(parts, ".") }
	for name, bad := range map[string]string{
		"empty":             "",
		"other version":     "v3." + strings.Join(p[1:], "."),
		"v1 label":          "v1." + strings.Join(p[1:], "."),
		"other queue":       join(p[0], "other", p[2], p[3], p[4]),
		"other member":      join(p[0], p[1], enc([]byte("a:BAAAAAAAAAAAAAAAAAAAAA")), p[3], p[4]),
		"empty member":      join(p[0], p[1], "", p[3], p[4]),
		"earlier seq":       join(p[0], p[1], p[2], "1", p[4]),
		"seq leading zero":  join(p[0], p[1], p[2], "042", p[4]),
		"seq plus":          join(p[0], p[1], p[2], "+42", p[4]),
		"seq negative":      join(p[0], p[1], p[2], "-42", p[4]),
		"seq empty":         join(p[0], p[1], p[2], "", p[4]),
		"seq too long":      join(p[0], p[1], p[2], "1234567890123456789", p[4]),
		"no seq":            join(p[0], p[1], p[2], p[4]),
		"flipped mac":       join(p[0], p[1], p[2], p[3], "B"+p[4][1:]),
		"short mac":         join(p[0], p[1], p[2], p[3], p[4][:20]),
		"padded mac":        tok + "=",
		"extra part":        tok + ".x",
		"non-canonical mac": join(p[0], p[1], p[2], p[3], p[4][:42]+nextChar(p[4][42])),
		"other secret":      newCreds(t, strings.Repeat("b", MinSecretBytes)).Issue("default", "a:AAAAAAAAAAAAAAAAAAAAAA", 42),
	} {
		if m, _, err := c.Verify("default", bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Verify(%q) = %q, %v; want ErrInvalid", name, bad, m, err)
		}
	}
	if _, _, err := c.Verify("other", tok); !errors.Is(err, ErrInvalid) {
		t.Errorf("a credential of queue default verified for queue other")
	}
}

// nextChar is the next base64url character: the last character of a
// 32-byte MAC carries 2 unused bits, which a lenient decoder ignores.
func nextChar(c byte) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	return string(alphabet[(strings.IndexByte(alphabet, c)+1)%64])
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

// lineBreaks are spellings of tok with CR or LF added, which
// encoding/base64 skips even when strict.
func lineBreaks(tok string) []string {
	return []string{tok + "\n", tok[:len(tok)-1] + "\n" + tok[len(tok)-1:], tok[:len(tok)-5] + "\r\n" + tok[len(tok)-5:]}
}

// A credential has one spelling: every other spelling of its member and
// of its MAC (the unused bits of their last characters) and line breaks
// are refused.
func TestCredentialOneSpelling(t *testing.T) {
	c := newCreds(t, secretA)
	tok := c.Issue("default", "u:alice", 9) // 7 bytes: 4 unused bits in the member's last character
	p := strings.Split(tok, ".")
	bad := append(lineBreaks(tok), strings.Join([]string{p[0], p[1], p[2][:4] + "\n" + p[2][4:], p[3], p[4]}, "."))
	for _, m := range respellings(t, p[2]) {
		bad = append(bad, strings.Join([]string{p[0], p[1], m, p[3], p[4]}, "."))
	}
	for _, mac := range respellings(t, p[4]) {
		bad = append(bad, strings.Join([]string{p[0], p[1], p[2], p[3], mac}, "."))
	}
	for _, b := range bad {
		if m, _, err := c.Verify("default", b); !errors.Is(err, ErrInvalid) {
			t.Errorf("Verify(%q) = %q, %v; want ErrInvalid", b, m, err)
		}
	}
}

func TestShortSecretsRefused(t *testing.T) {
	if _, err := New([]byte("short")); err == nil {
		t.Error("New took a short secret")
	}
	if _, err := NewJoin([]byte("short")); err == nil {
		t.Error("NewJoin took a short secret")
	}
}

// Member ids are 128 random bits: none repeat over many draws, and each
// is valid as a store user id.
func TestNewMember(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		m := NewMember()
		if len(m) != 2+22 || !strings.HasPrefix(m, "a:") || seen[m] {
			t.Fatalf("member %q (seen before: %v)", m, seen[m])
		}
		seen[m] = true
	}
}

// The pooled MAC states are safe to share between goroutines.
func TestCredentialsConcurrently(t *testing.T) {
	c := newCreds(t, secretA)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				m := NewMember()
				if got, seq, err := c.Verify("q", c.Issue("q", m, int64(i))); err != nil || got != m || seq != int64(i) {
					t.Errorf("goroutine %d, round %d: %q, %v", g, i, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Whatever a client sends as a credential, Verify never panics, and what
// it accepts is exactly what Issue would write: one spelling per place.
func FuzzVerify(f *testing.F) {
	c, err := New([]byte(secretA))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(c.Issue("q", "a:AAAAAAAAAAAAAAAAAAAAAA", 17))
	f.Add(issueV1(c, "q", "u:bob"))
	f.Add("v2.q.YTpB.0.AAAA")
	f.Fuzz(func(t *testing.T, tok string) {
		m, seq, err := c.Verify("q", tok)
		if err != nil {
			return
		}
		if strings.HasPrefix(tok, "v2.") && c.Issue("q", m, seq) != tok {
			t.Fatalf("%q verified as (%q, %d), which Issue spells %q", tok, m, seq, c.Issue("q", m, seq))
		}
		if strings.HasPrefix(tok, "v1.") && issueV1(c, "q", m) != tok {
			t.Fatalf("v1 %q verified, which issues as %q", tok, issueV1(c, "q", m))
		}
	})
}
