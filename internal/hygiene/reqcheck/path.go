// Package reqcheck reads the parts of an incoming request that cross the
// trust boundary and that more than one door checks the same way: the
// path a gate decides on, a bearer token, a return path.
package reqcheck

import (
	"errors"
	"path"
	"strings"
	"unicode/utf8"
)

// ErrAmbiguousPath means a request's path can be read more than one way by
// the servers behind a gate (an encoded slash, backslash or dot, a NUL or
// other control byte, a double encoding, a dot segment with parameters,
// bytes that are not UTF-8), so no decision made on one reading is safe.
var ErrAmbiguousPath = errors.New("reqcheck: ambiguous path")

// CleanPath returns the path a request names as an upstream resolves it:
// percent-decoded, with "." and ".." segments applied and duplicate slashes
// merged; a trailing slash is kept. escaped is the path as sent
// (url.URL.EscapedPath). Anything a server might resolve differently is
// ErrAmbiguousPath instead of a guess:
//
//   - an encoded '/', '\\', '.' or '%' (so "%2e%2e", "..%2f" and double
//     encodings such as "%252e" never become dot segments or separators
//     further along);
//   - a backslash, a NUL or any control byte, encoded or not;
//   - a segment of dots with ";" parameters ("..;" is ".." to Tomcat) and
//     a segment of three or more dots, or of dots and trailing spaces
//     (".. " is ".." to Windows servers);
//   - a decoded path that is not UTF-8 (overlong forms of '.' and '/').
//
// A gate decides on the clean path and forwards that same path, so what it
// checked is what the upstream serves.
func CleanPath(escaped string) (string, error) {
	_, clean, err := cleanPath(escaped)
	return clean, err
}

// IsCanonical reports whether escaped is a path that every server resolves
// as it is: CleanPath accepts it and has no dot segment or duplicate slash
// to resolve. A forward-auth check needs that, since the proxy in front
// forwards the path as the client sent it, not the one the check cleaned.
func IsCanonical(escaped string) bool {
	decoded, clean, err := cleanPath(escaped)
	return err == nil && clean == decoded
}

// cleanPath is CleanPath, which also returns the path decoded.
func cleanPath(escaped string) (decoded, clean string, err error) {
	if escaped == "" || escaped[0] != '/' {
		return "", "", ErrAmbiguousPath
	}
	if isClean(escaped) {
		return escaped, escaped, nil // the common case: nothing to decode or resolve
	}
	var b strings.Builder
	b.Grow(len(escaped))
	for i := 0; i < len(escaped); i++ {
		c := escaped[i]
		if c == '%' {
			if i+2 >= len(escaped) || !isHex(escaped[i+1]) || !isHex(escaped[i+2]) {
				return "", "", ErrAmbiguousPath
			}
			c = unhex(escaped[i+1])<<4 | unhex(escaped[i+2])
			i += 2
			if c == '/' || c == '.' || c == '%' {
				return "", "", ErrAmbiguousPath
			}
		}
		if c == '\\' || c < 0x20 || c == 0x7f {
			return "", "", ErrAmbiguousPath
		}
		b.WriteByte(c)
	}
	p := b.String()
	if !utf8.ValidString(p) {
		return "", "", ErrAmbiguousPath
	}
	for seg := range strings.SplitSeq(p, "/") {
		if ambiguousSegment(seg) {
			return "", "", ErrAmbiguousPath
		}
	}
	clean = path.Clean(p)
	if strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..") {
		if clean != "/" {
			clean += "/"
		}
	}
	return p, clean, nil
}

// isClean reports whether p has nothing to decode or resolve: no escape,
// no backslash, space or control byte, no "//", no segment starting with a dot
// and no ";". Such a path is its own clean form.
func isClean(p string) bool {
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '%' || c == '\\' || c == ';' || c <= ' ' || c >= 0x7f:
			return false
		case c == '/' && i+1 < len(p) && (p[i+1] == '/' || p[i+1] == '.'):
			return false
		}
	}
	return true
}

// ambiguousSegment reports whether a decoded segment is read as "." or
// ".." by some servers and as a name by others. Exactly "." and ".." are
// not: every server resolves them, and so does CleanPath.
func ambiguousSegment(seg string) bool {
	if seg == "." || seg == ".." {
		return false
	}
	base, _, params := strings.Cut(seg, ";")
	dots := strings.TrimRight(base, ". ") == "" // "", ".", "...", ".. "
	if params {
		return dots // "..;x", ".;", ";x": Tomcat drops the parameters
	}
	return dots && strings.Contains(base, ".")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}
