package reqcheck

import (
	"net/http"
	"net/url"
	"strings"
)

// BearerToken returns the token of an "Authorization: Bearer <token>"
// header; the scheme is case-insensitive (RFC 9110, section 11.1).
func BearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const scheme = "bearer "
	if len(h) <= len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	return strings.TrimSpace(h[len(scheme):]), true
}

// MaxReturnBytes bounds a return path.
const MaxReturnBytes = 2048

// SameSitePath reports whether p may be a return path: a path on this
// site ("/order?event=7"), never an absolute or scheme-relative URL or
// anything a browser might read as one ("//evil.example", "/\\evil",
// control characters), so the waiting page cannot be made to send anyone
// to another site.
func SameSitePath(p string) bool {
	if len(p) == 0 || len(p) > MaxReturnBytes || p[0] != '/' || (len(p) > 1 && (p[1] == '/' || p[1] == '\\')) {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil
}
