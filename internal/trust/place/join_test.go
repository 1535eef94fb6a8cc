package place

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/internal/engine/queue"
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

// FuzzJoinLane: whatever a signed token's sub and lane claim hold, a
// member comes back only for a lane name [a-z0-9-]{1,32}, names that
// lane (queue.LaneOf) and no other place, is a valid member id, and a
// lane claim that names no lane is queue.ErrUnknownLane; a token with no
// lane names the general lane's "u:" member as before.
func FuzzJoinLane(f *testing.F) {
	for _, c := range [][2]string{{"alice", "priority"}, {"a:b:c", "p"}, {"x", ""}, {"x", "Priority"}, {"x", "a:b"},
		{"x", strings.Repeat("a", 33)}, {"l:p:x", "q"}, {strings.Repeat("s", 120), "lane"}, {"x", "../p"}, {"x", "p\n"}} {
		f.Add(c[0], c[1])
	}
	j, err := NewJoin([]byte(secretA))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, sub, lane string) {
		if !utf8.ValidString(sub) || !utf8.ValidString(lane) {
			return // JSON would carry another string than the one given
		}
		claims := jwt.MapClaims{"sub": sub, "aud": "default", "exp": time.Now().Add(time.Hour).Unix()}
		if lane != "" {
			claims["lane"] = lane
		}
		member, err := j.Member("default", mintJoin(t, claims))
		if err != nil {
			if lane != "" && queue.CheckLaneName(lane) && errors.Is(err, queue.ErrUnknownLane) {
				t.Fatalf("a valid lane %q refused as unknown", lane)
			}
			if lane != "" && !queue.CheckLaneName(lane) && !errors.Is(err, queue.ErrUnknownLane) && !errors.Is(err, ErrInvalidJoin) {
				t.Fatalf("lane %q: %v", lane, err)
			}
			return
		}
		if queue.ValidateUserID(member) != nil {
			t.Fatalf("member %q is no valid id", member)
		}
		if got := queue.LaneOf(member); got != lane {
			t.Fatalf("sub %q lane %q: member %q is in lane %q", sub, lane, member, got)
		}
		if want := "u:" + sub; lane == "" && member != want {
			t.Fatalf("no lane: %q, want %q", member, want)
		}
		if lane != "" && member != queue.LaneMember(lane, sub) {
			t.Fatalf("lane %q: %q", lane, member)
		}
	})
}
