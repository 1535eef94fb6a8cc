package invite

import (
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"k7qm-x2rd-9wht":    "K7QMX2RD9WHT",
		" K7QM X2RD 9WHT ":  "K7QMX2RD9WHT",
		"Summer-Guest-0001": "SUMMERGUEST0001",
	} {
		if got, ok := Normalize(in); !ok || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "short", "ABCD_EFGH", "ÄBCDEFGH", "ABCDEFG\x00", strings.Repeat("A", MaxLength+1),
		strings.Repeat("A-", MaxLength+1)} {
		if got, ok := Normalize(in); ok {
			t.Errorf("Normalize(%q) = %q, want refused", in, got)
		}
	}
}

// Made codes are of the alphabet, in three groups of four, and differ.
func TestMake(t *testing.T) {
	codes := Make(10_000)
	seen := map[string]bool{}
	counts := map[rune]int{}
	for _, c := range codes {
		if len(c) != Length+2 || c[4] != '-' || c[9] != '-' || seen[c] {
			t.Fatalf("code %q", c)
		}
		seen[c] = true
		for _, r := range strings.ReplaceAll(c, "-", "") {
			if !strings.ContainsRune(Alphabet, r) {
				t.Fatalf("code %q has %q", c, r)
			}
			counts[r]++
		}
	}
	// Each letter about 120,000 / 31 = 3,871 times: none far off (a
	// modulo bias would put the first letters ~3 % above).
	for _, r := range Alphabet {
		if n := counts[r]; n < 3400 || n > 4350 {
			t.Errorf("%q drawn %d times of 120,000", r, n)
		}
	}
	if !strings.ContainsAny(Alphabet, "23456789") || strings.ContainsAny(Alphabet, "01ILO") {
		t.Fatal("the alphabet has a look-alike")
	}
}

// A digest is the same for a code however typed, differs per queue and
// per secret, and names nothing of the code.
func TestDigest(t *testing.T) {
	a, _ := New([]byte("secret-one-0123456789-0123456789"))
	b, _ := New([]byte("secret-two-0123456789-0123456789"))
	d1, _ := a.Digest("q", "K7QM-X2RD-9WHT")
	d2, _ := a.Digest("q", "k7qm x2rd 9wht")
	d3, _ := a.Digest("other", "K7QM-X2RD-9WHT")
	d4, _ := b.Digest("q", "K7QM-X2RD-9WHT")
	if d1 != d2 || d1 == d3 || d1 == d4 || strings.Contains(d1, "K7QM") || len(d1) != 22 {
		t.Fatalf("digests %q %q %q %q", d1, d2, d3, d4)
	}
	if _, err := a.Digests("q", []string{"GOODCODE1", "bad"}); err != ErrShape {
		t.Fatalf("a bad upload: %v", err)
	}
}
