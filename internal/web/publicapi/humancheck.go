package publicapi

import (
	"strings"

	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// waitingPageCSP is the waiting page's Content-Security-Policy when the
// room asks for a human check: contentSecurityPolicy, with the sources
// the provider's widget needs (its script, its frame, its requests and
// styles), and the page's rescue. nil without a provider: the page keeps the policy every
// answer gets, which allows no third party at all.
func waitingPageCSP(p humancheck.Public) []string {
	src := p.CSP()
	if len(src.Script) == 0 {
		return nil
	}
	with := func(list []string) string {
		out := "'self'"
		for _, s := range list {
			if cspSource(s) {
				out += " " + s
			}
		}
		return out
	}
	policy := "default-src 'self'; script-src " + with(src.Script) + " " + httpkit.RescueHash + "; style-src " + with(src.Style) +
		"; img-src 'self' data:; connect-src " + with(src.Connect) + "; frame-src " + with(src.Frame) +
		"; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
	return []string{policy}
}

// cspSource reports whether s is a plain source expression (scheme, host,
// port, path, a leading wildcard): a configured address can then never
// add a directive of its own.
func cspSource(s string) bool {
	if s == "" {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(":/.-_*[]", r))
	})
}
