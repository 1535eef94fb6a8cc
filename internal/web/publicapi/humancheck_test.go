package publicapi

import (
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// The waiting page names the widget's sources only with a provider, and
// a configured address never adds a directive.
func TestWaitingPageCSP(t *testing.T) {
	if got := waitingPageCSP(humancheck.Public{}); got != nil {
		t.Errorf("no provider: %q, want the common policy", got)
	}
	if got := waitingPageCSP(humancheck.Public{Provider: "off"}); got != nil {
		t.Errorf("off: %q, want the common policy", got)
	}
	got := waitingPageCSP(humancheck.Public{Provider: "turnstile", SiteKey: "k", ScriptURL: "http://127.0.0.1:4711/widget.js"})
	if len(got) != 1 {
		t.Fatalf("turnstile: %q", got)
	}
	for _, want := range []string{
		"script-src 'self' https://challenges.cloudflare.com http://127.0.0.1:4711 " + httpkit.RescueHash + ";",
		"frame-src 'self' https://challenges.cloudflare.com http://127.0.0.1:4711;",
		"connect-src 'self' http://127.0.0.1:4711;",
		"frame-ancestors 'none'", "default-src 'self'", "base-uri 'none'",
	} {
		if !strings.Contains(got[0], want) {
			t.Errorf("turnstile's policy %q lacks %q", got[0], want)
		}
	}
	evil := waitingPageCSP(humancheck.Public{Provider: "hcaptcha", ScriptURL: "https://js.example;script-src *"})
	if strings.Contains(evil[0], "*;") || strings.Count(evil[0], "script-src") != 1 {
		t.Errorf("a crafted address changed the policy: %q", evil[0])
	}
}
