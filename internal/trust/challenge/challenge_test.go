package challenge

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func newChallenges(t testing.TB) *Challenges {
	t.Helper()
	c, err := New([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIssueAndCheck(t *testing.T) {
	c := newChallenges(t)
	ch, expires := c.Issue("q", 12)
	if d := time.Until(expires); d < TTL-time.Second || d > TTL {
		t.Fatalf("expires in %s", d)
	}
	nonce := Solve(ch, 12)
	p, err := c.Check("q", ch, nonce)
	if err != nil {
		t.Fatal(err)
	}
	if p.Difficulty != 12 || !p.Expires.Equal(expires) || len(p.ID) != 22 {
		t.Fatalf("proof %+v", p)
	}
	// A nonce that misses the difficulty (the first that does not).
	bad := "0"
	for i := 0; LeadingZeroBits(ch, bad) >= 12; i++ {
		bad = strings.Repeat("x", i+1)
	}
	other, _ := New([]byte(strings.Repeat("o", 32)))
	forged, _ := other.Issue("q", 12)
	parts := strings.Split(ch, ".")
	easier := strings.Join([]string{parts[0], parts[1], "0", parts[3], parts[4], parts[5]}, ".")
	for name, tc := range map[string]struct{ queue, challenge, nonce string }{
		"wrong solution":           {"q", ch, bad},
		"another queue":            {"r", ch, nonce},
		"signed with another key":  {"q", forged, Solve(forged, 12)},
		"difficulty edited":        {"q", easier, "0"},
		"empty nonce":              {"q", ch, ""},
		"nonce too long":           {"q", ch, strings.Repeat("1", MaxNonce+1)},
		"nonce with a space":       {"q", ch, nonce + " "},
		"garbage":                  {"q", "c1.q.x", nonce},
		"mac not base64":           {"q", strings.Join(append(parts[:5:5], "!!"), "."), nonce},
		"empty challenge":          {"q", "", nonce},
		"queue with a dot smuggle": {"q.12", ch, nonce},
	} {
		if _, err := c.Check(tc.queue, tc.challenge, tc.nonce); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	// Expired.
	c.now = func() time.Time { return time.Now().Add(TTL + time.Second) }
	if _, err := c.Check("q", ch, nonce); !errors.Is(err, ErrInvalid) {
		t.Errorf("expired: %v", err)
	}
	if _, err := New([]byte("short")); err == nil {
		t.Error("short secret accepted")
	}
}

func TestLeadingZeroBits(t *testing.T) {
	// Against the definition, bit by bit.
	for _, n := range []string{"0", "1", "abc", Solve("c", 8), Solve("c", 16)} {
		got := LeadingZeroBits("c", n)
		sum := sha256.Sum256([]byte("c:" + n))
		want := 0
		for _, b := range sum {
			for bit := 7; bit >= 0; bit-- {
				if b>>bit&1 != 0 {
					goto done
				}
				want++
			}
		}
	done:
		if got != want {
			t.Errorf("%q: %d, want %d", n, got, want)
		}
	}
	if LeadingZeroBits("c", Solve("c", 16)) < 16 {
		t.Error("Solve missed the difficulty")
	}
}

// BenchmarkSolve is the attacker's cost of one place at each difficulty,
// solving natively in Go (faster than a browser's WebCrypto): ns/op is
// the CPU time of one solution on one core.
//
//	go test -run x -bench Solve ./internal/trust/challenge/
func BenchmarkSolve(b *testing.B) {
	c := newChallenges(b)
	for _, d := range []int{12, 16, 18, 20} {
		b.Run("difficulty="+strconv.Itoa(d), func(b *testing.B) {
			for b.Loop() {
				ch, _ := c.Issue("q", d)
				Solve(ch, d)
			}
		})
	}
}

// BenchmarkCheck is the server's cost of checking one solution.
func BenchmarkCheck(b *testing.B) {
	c := newChallenges(b)
	ch, _ := c.Issue("q", 8)
	nonce := Solve(ch, 8)
	for b.Loop() {
		if _, err := c.Check("q", ch, nonce); err != nil {
			b.Fatal(err)
		}
	}
}

// A challenge has one spelling: its MAC with other values in the 2 unused
// bits of its last character, which a lenient decoder reads as the same
// bytes, or with a line break, which encoding/base64 skips, is refused.
func TestCheckOneSpelling(t *testing.T) {
	c := newChallenges(t)
	ch, _ := c.Issue("q", 0) // any nonce solves it
	if _, err := c.Check("q", ch, "0"); err != nil {
		t.Fatal(err)
	}
	cut := strings.LastIndexByte(ch, '.') + 1
	mac, _ := base64.RawURLEncoding.Strict().DecodeString(ch[cut:])
	bad := []string{ch[:cut+5] + "\n" + ch[cut+5:], ch[:len(ch)-1] + "\r\n" + ch[len(ch)-1:]}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for _, r := range alphabet {
		alt := ch[:len(ch)-1] + string(r)
		if got, err := base64.RawURLEncoding.DecodeString(alt[cut:]); alt != ch && err == nil && bytes.Equal(got, mac) {
			bad = append(bad, alt)
		}
	}
	if len(bad) != 2+3 {
		t.Fatalf("%d spellings, want 2 with line breaks and 3 respellings", len(bad))
	}
	for _, b := range bad {
		if _, err := c.Check("q", b, "0"); !errors.Is(err, ErrInvalid) {
			t.Errorf("Check(%q) = %v, want ErrInvalid", b, err)
		}
	}
}

// BenchmarkHashRate is what one core hashes a second in native Go, the
// attacker's side of the price of a place (docs/attacks/bots.md): "solve"
// as Solve does (a decimal nonce appended to a fresh string each try),
// "tuned" with the message built in place in one buffer, as a solver
// written for speed would. hashes/s is the figure; ns/op one hash.
//
//	go test -run x -bench HashRate -benchtime 3000000x ./internal/trust/challenge/
func BenchmarkHashRate(b *testing.B) {
	c := newChallenges(b)
	ch, _ := c.Issue("q", 30)
	b.Run("solve", func(b *testing.B) {
		i := 0
		for b.Loop() {
			_ = LeadingZeroBits(ch, strconv.Itoa(i))
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "hashes/s")
	})
	b.Run("tuned", func(b *testing.B) {
		buf := append([]byte(ch), ':')
		prefix := len(buf)
		i := 0
		for b.Loop() {
			buf = strconv.AppendInt(buf[:prefix], int64(i), 10)
			sum := sha256.Sum256(buf)
			_ = sum[0] == 0 && sum[1] == 0
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "hashes/s")
	})
}

// A challenge lives at least TTL, longer when it is harder than a slow
// phone solves well within that, and never beyond MaxTTL; Issue stamps
// that life (the price of a place: a network holding many places is asked for work
// that takes a browser hours).
func TestTTLFor(t *testing.T) {
	last := time.Duration(0)
	for d := 0; d <= 64; d++ {
		ttl := TTLFor(d)
		if ttl < TTL || ttl > MaxTTL || ttl < last {
			t.Fatalf("TTLFor(%d) = %s after %s", d, ttl, last)
		}
		last = ttl
	}
	if TTLFor(16) != TTL || TTLFor(24) < 30*time.Minute || TTLFor(30) != MaxTTL {
		t.Fatalf("TTLFor: 16 %s, 24 %s, 30 %s", TTLFor(16), TTLFor(24), TTLFor(30))
	}
	c := newChallenges(t)
	now := time.Now()
	c.now = func() time.Time { return now }
	if _, exp := c.Issue("q", 26); exp.Sub(now) < TTLFor(26)-time.Millisecond {
		t.Fatalf("a challenge at 26 expires after %s, want %s", exp.Sub(now), TTLFor(26))
	}
}

// Stated reads the difficulty an issued challenge names, and nothing from
// a string not shaped like one.
func TestStated(t *testing.T) {
	c := newChallenges(t)
	for _, d := range []int{0, 1, 17, 32} {
		if ch, _ := c.Issue("q", d); !func() bool { got, ok := Stated(ch); return ok && got == d }() {
			t.Errorf("Stated(Issue(q, %d)) is not %d", d, d)
		}
	}
	for _, ch := range []string{"", "c1", "c1.q.8.1.a", "c2.q.8.1.a.b", "c1.q.x.1.a.b", "c1.q.-1.1.a.b", "c1.q.08.1.a.b", "c1.q.+8.1.a.b", "c1.q.8.1.a.b.c"} {
		if d, ok := Stated(ch); ok {
			t.Errorf("Stated(%q) = %d, want none", ch, d)
		}
	}
}
