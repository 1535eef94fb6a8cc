package humancheck

import "slices"

// Sources are what a page's Content-Security-Policy must allow, beyond
// 'self', for a provider's widget: its script, the frame it draws the
// check in, the requests and styles it makes. Each list holds CSP source
// expressions.
type Sources struct {
	Script, Frame, Connect, Style []string
}

// providerSources are the providers' documented needs: Turnstile's
// "Content Security Policy" page, hCaptcha's and reCAPTCHA's FAQ (whose
// api.js loads its code from www.gstatic.com).
var providerSources = map[Provider]Sources{
	Turnstile: {
		Script: []string{"https://challenges.cloudflare.com"},
		Frame:  []string{"https://challenges.cloudflare.com"},
	},
	HCaptcha: {
		Script:  []string{"https://hcaptcha.com", "https://*.hcaptcha.com"},
		Frame:   []string{"https://hcaptcha.com", "https://*.hcaptcha.com"},
		Connect: []string{"https://hcaptcha.com", "https://*.hcaptcha.com"},
		Style:   []string{"https://hcaptcha.com", "https://*.hcaptcha.com"},
	},
	ReCAPTCHA: {
		Script: []string{"https://www.google.com/recaptcha/", "https://www.gstatic.com/recaptcha/"},
		Frame:  []string{"https://www.google.com/recaptcha/", "https://recaptcha.google.com/recaptcha/"},
	},
}

// CSP is what the page's policy must allow for p's widget: the provider's
// documented sources, and the origin of p's script in script-src,
// frame-src and connect-src (a script served from elsewhere, such as a
// stand-in or a proxy of the provider, draws and asks from there). The
// zero Sources for no provider.
func (p Public) CSP() Sources {
	prov := Provider(p.Provider)
	if prov == "" || prov == Off {
		return Sources{}
	}
	s := providerSources[prov]
	s = Sources{
		Script: slices.Clone(s.Script), Frame: slices.Clone(s.Frame),
		Connect: slices.Clone(s.Connect), Style: slices.Clone(s.Style),
	}
	if o := Origin(p.ScriptURL); o != "" {
		add := func(list []string) []string {
			if slices.Contains(list, o) {
				return list
			}
			return append(list, o)
		}
		s.Script, s.Frame, s.Connect = add(s.Script), add(s.Frame), add(s.Connect)
	}
	return s
}
