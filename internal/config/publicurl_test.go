package config

import (
	"strings"
	"testing"
)

// WAITROOM_PUBLIC_URL: an origin, by default the issuer when
// that is one; anything else refuses to start.
func TestPublicURL(t *testing.T) {
	for _, c := range []struct {
		public, issuer, want string
		ok                   bool
	}{
		{"", "", "", true},
		{"", "waitroom", "", true},
		{"", "https://waitroom.example", "https://waitroom.example", true},
		{"", "https://waitroom.example/", "https://waitroom.example", true},
		{"", "https://waitroom.example/wr", "", true}, // not an origin: no QR codes
		{"https://q.example:8443/", "waitroom", "https://q.example:8443", true},
		{"http://[::1]:8080", "https://waitroom.example", "http://[::1]:8080", true},
		{"https://q.example/path", "", "", false},
		{"https://user:pw@q.example", "", "", false},
		{"https://q.example?x=1", "", "", false},
		{"https://q.example#x", "", "", false},
		{"ftp://q.example", "", "", false},
		{"q.example", "", "", false},
		{"https://", "", "", false},
	} {
		cfg, err := Load(env(map[string]string{"WAITROOM_PUBLIC_URL": c.public, "WAITROOM_ISSUER": c.issuer}))
		if c.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "WAITROOM_PUBLIC_URL")) {
			t.Errorf("%q (issuer %q): %v", c.public, c.issuer, err)
			continue
		}
		if c.ok && cfg.PublicURL != c.want {
			t.Errorf("%q (issuer %q): %q, want %q", c.public, c.issuer, cfg.PublicURL, c.want)
		}
	}
}
