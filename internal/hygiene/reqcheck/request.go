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

// BearerScheme returns the credentials of one Authorization value whose
// scheme is Bearer, in any case and followed by any run of spaces or tabs
// ("Bearer\ttoken", "BEARER   token"); ok = false for any other scheme.
// A bare "Bearer" is a bearer with no token. The gate reads a pass with
// it, and strips what it read with it, so no spelling a server behind it
// might take for a bearer token gets past unchecked.
func BearerScheme(v string) (token string, ok bool) {
	const scheme = "bearer"
	v = strings.TrimLeft(v, " \t")
	if len(v) < len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", false
	}
	rest := v[len(scheme):]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false // "Bearerx": another scheme
	}
	return strings.Trim(rest, " \t"), true
}

// HasBearer reports whether h has an Authorization header of the Bearer
// scheme in any spelling BearerScheme reads as one: the header that
// carried a pass, which the reverse-proxy gate removes once it is checked.
func HasBearer(h http.Header) bool {
	for _, v := range h.Values("Authorization") {
		if _, ok := BearerScheme(v); ok {
			return true
		}
	}
	return false
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
