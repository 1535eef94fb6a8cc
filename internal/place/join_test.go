package place

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func mintJoin(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secretA))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A join token may live up to a day (MaxJoinLifetime): one whose exp is
// further ahead is refused as any other invalid join token is.
func TestJoinLifetime(t *testing.T) {
	j, err := NewJoin([]byte(secretA))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, tc := range []struct {
		name string
		exp  int64
		ok   bool
	}{
		{"five minutes", now.Add(5 * time.Minute).Unix(), true},
		{"a day less a minute", now.Add(24*time.Hour - time.Minute).Unix(), true},
		{"a day and a minute", now.Add(24*time.Hour + time.Minute).Unix(), false},
		{"a year", now.AddDate(1, 0, 0).Unix(), false},
		{"year 9999", time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC).Unix(), false},
		{"the largest int64", math.MaxInt64, false},
	} {
		member, err := j.Member("default", mintJoin(t, jwt.MapClaims{"sub": "alice", "aud": "default", "exp": tc.exp}))
		switch {
		case tc.ok && (err != nil || member != "u:alice"):
			t.Errorf("%s: %q, %v; want u:alice", tc.name, member, err)
		case !tc.ok && !errors.Is(err, ErrInvalidJoin):
			t.Errorf("%s: %q, %v; want ErrInvalidJoin", tc.name, member, err)
		}
	}
}

// A join token has one spelling: every other spelling of its HS256
// signature (the 3 values of the 2 unused bits of its last character),
// which the parser without strict decoding accepts, and line breaks are
// refused as any other invalid join token is.
func TestJoinOneSpelling(t *testing.T) {
	j, err := NewJoin([]byte(secretA))
	if err != nil {
		t.Fatal(err)
	}
	good := mintJoin(t, jwt.MapClaims{"sub": "alice", "aud": "default", "exp": time.Now().Add(5 * time.Minute).Unix()})
	if _, err := j.Member("default", good); err != nil {
		t.Fatal(err)
	}
	// The parser as Member called it before it decoded strictly.
	lenient := func(tok string) error {
		var claims jwt.RegisteredClaims
		_, err := jwt.ParseWithClaims(tok, &claims, func(*jwt.Token) (any, error) { return []byte(secretA), nil },
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
			jwt.WithAudience("default"))
		return err
	}
	cut := strings.LastIndexByte(good, '.') + 1
	bad := lineBreaks(good)
	for _, sig := range respellings(t, good[cut:]) {
		bad = append(bad, good[:cut]+sig)
	}
	for _, tok := range bad {
		if err := lenient(tok); err != nil {
			t.Fatalf("the lenient parser refused %q: %v", tok, err)
		}
		if m, err := j.Member("default", tok); !errors.Is(err, ErrInvalidJoin) {
			t.Errorf("Member(%q) = %q, %v; want ErrInvalidJoin", tok, m, err)
		}
	}
}
