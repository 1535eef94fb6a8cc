package webhook

import (
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestCheckURL(t *testing.T) {
	for _, c := range []struct {
		url      string
		insecure bool
		ok       bool
	}{
		{"https://hooks.example/waitroom", false, true},
		{"https://hooks.example:8443/w?token=abc", false, true},
		{"http://hooks.example/w", false, false},
		{"http://hooks.example/w", true, true},
		{"http://127.0.0.1:8080/w", false, true},
		{"http://[::1]:8080/w", false, true},
		{"http://localhost/w", false, true},
		{"http://127.0.0.1.evil.example/w", false, false},
		{"ftp://hooks.example/w", true, false},
		{"https://user:pass@hooks.example/w", false, false},
		{"https://hooks.example/w#frag", false, false},
		{"//hooks.example/w", false, false},
		{"/w", false, false},
		{"https:///w", false, false},
		{"https:hooks.example", false, false},
		{"", false, false},
		{"https://hooks.example/" + strings.Repeat("a", MaxURLBytes), false, false},
	} {
		if err := CheckURL(c.url, c.insecure); (err == nil) != c.ok {
			t.Errorf("CheckURL(%q, %v) = %v, want ok %v", c.url, c.insecure, err, c.ok)
		}
	}
}

// TestCheckURLGenerated: whatever the input, an accepted URL is absolute
// https, or http to a loopback host or with the insecure switch; never
// with user info.
func TestCheckURLGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	parts := []string{"https", "http", "HTTPS", "ftp", "javascript", ":", "//", "/", "@", "user", ":pw", "#", "?", "%00", "%2F",
		"127.0.0.1", "localhost", "[::1]", "169.254.169.254", "hooks.example", ":443", " ", "\n", "\\", ".", "..", "x"}
	for range 20000 {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		raw, insecure := b.String(), r.IntN(2) == 0
		if CheckURL(raw, insecure) != nil {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || u.User != nil {
			t.Fatalf("accepted %q", raw)
		}
		if u.Scheme != "https" && !(u.Scheme == "http" && (insecure || isLoopback(u.Hostname()))) {
			t.Fatalf("accepted %q (insecure %v)", raw, insecure)
		}
	}
}

func FuzzCheckURL(f *testing.F) {
	f.Add("https://hooks.example/w", false)
	f.Add("http://127.0.0.1/w", false)
	f.Fuzz(func(t *testing.T, raw string, insecure bool) {
		if CheckURL(raw, insecure) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil || u.User != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			t.Fatalf("accepted %q", raw)
		}
	})
}

// TestRefusesLinkLocal: the delivery client never reaches a cloud
// metadata address, however the URL names it.
func TestRefusesLinkLocal(t *testing.T) {
	c := newClient(time.Second)
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/", "http://0.0.0.0/"} {
		resp, err := c.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s reached", u)
		}
		if !strings.Contains(err.Error(), "refusing to dial") {
			t.Errorf("%s: %v, want a refusal", u, err)
		}
	}
	// And no redirect is followed.
	if c.CheckRedirect(&http.Request{}, nil) != http.ErrUseLastResponse {
		t.Error("redirects followed")
	}
}

// TestVerifyGenerated: a signature verifies its body and timestamp only;
// any change of a byte of the body, another secret or a timestamp out of
// tolerance fails.
func TestVerifyGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	for range 2000 {
		body := make([]byte, 1+r.IntN(200))
		for i := range body {
			body[i] = byte(r.IntN(256))
		}
		at := now.Add(time.Duration(r.IntN(20)-10) * time.Minute)
		h := Sign(secret, at, body)
		err := Verify(secret, h, body, now, Tolerance)
		if inTime := now.Sub(at).Abs() <= Tolerance; (err == nil) != inTime {
			t.Fatalf("signed %v before now: %v", now.Sub(at), err)
		}
		tampered := append([]byte(nil), body...)
		tampered[r.IntN(len(tampered))] ^= byte(1 + r.IntN(255))
		if Verify(secret, h, tampered, now, time.Hour) == nil {
			t.Fatal("a tampered body verified")
		}
		if Verify(append([]byte("x"), secret...), h, body, now, time.Hour) == nil {
			t.Fatal("another secret verified")
		}
	}
	for _, h := range []string{"", "t=", "v1=00", "t=abc,v1=00", "t=1800000000", "t=1800000000,v1=zz"} {
		if Verify(secret, h, []byte("{}"), now, Tolerance) == nil {
			t.Errorf("header %q verified", h)
		}
	}
}
