package place

import (
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
	for _, member := range []string{NewMember(), "u:alice", "u:김철수 🎫", "plain-id"} {
		tok := c.Issue("default", member)
		if !strings.HasPrefix(tok, "v1.default.") {
			t.Fatalf("credential %q does not name its queue", tok)
		}
		got, err := c.Verify("default", tok)
		if err != nil || got != member {
			t.Fatalf("Verify(%q) = %q, %v; want %q", tok, got, err, member)
		}
	}
}

// Any change to a credential, another queue or another secret makes it
// invalid.
func TestCredentialRefuses(t *testing.T) {
	c := newCreds(t, secretA)
	tok := c.Issue("default", "a:AAAAAAAAAAAAAAAAAAAAAA")
	p := strings.Split(tok, ".")
	enc := base64.RawURLEncoding.EncodeToString
	for name, bad := range map[string]string{
		"empty":             "",
		"other version":     "v2." + strings.Join(p[1:], "."),
		"other queue":       strings.Join([]string{p[0], "other", p[2], p[3]}, "."),
		"other member":      strings.Join([]string{p[0], p[1], enc([]byte("a:BAAAAAAAAAAAAAAAAAAAAA")), p[3]}, "."),
		"empty member":      strings.Join([]string{p[0], p[1], "", p[3]}, "."),
		"flipped mac":       strings.Join([]string{p[0], p[1], p[2], "B" + p[3][1:]}, "."),
		"short mac":         strings.Join([]string{p[0], p[1], p[2], p[3][:20]}, "."),
		"padded mac":        tok + "=",
		"extra part":        tok + ".x",
		"non-canonical mac": strings.Join([]string{p[0], p[1], p[2], p[3][:42] + nextChar(p[3][42])}, "."),
		"other secret":      newCreds(t, strings.Repeat("b", MinSecretBytes)).Issue("default", "a:AAAAAAAAAAAAAAAAAAAAAA"),
	} {
		if m, err := c.Verify("default", bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Verify(%q) = %q, %v; want ErrInvalid", name, bad, m, err)
		}
	}
	if _, err := c.Verify("other", tok); !errors.Is(err, ErrInvalid) {
		t.Errorf("a credential of queue default verified for queue other")
	}
}

// nextChar is the next base64url character: the last character of a
// 32-byte MAC carries 2 unused bits, which a lenient decoder ignores.
func nextChar(c byte) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	return string(alphabet[(strings.IndexByte(alphabet, c)+1)%64])
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
				if got, err := c.Verify("q", c.Issue("q", m)); err != nil || got != m {
					t.Errorf("goroutine %d, round %d: %q, %v", g, i, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
