package humancheck

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"
)

// Provider names a human check's service.
type Provider string

const (
	Off       Provider = "off"
	Turnstile Provider = "turnstile" // Cloudflare Turnstile
	HCaptcha  Provider = "hcaptcha"
	ReCAPTCHA Provider = "recaptcha" // Google reCAPTCHA (v2 and v3 verify alike)
)

// Defaults of Options.
const (
	DefaultTimeout     = 3 * time.Second
	DefaultMaxInFlight = 64
)

// endpoints are a provider's own siteverify and widget script addresses.
type endpoints struct{ verify, script string }

var providers = map[Provider]endpoints{
	Turnstile: {"https://challenges.cloudflare.com/turnstile/v0/siteverify", "https://challenges.cloudflare.com/turnstile/v0/api.js"},
	HCaptcha:  {"https://api.hcaptcha.com/siteverify", "https://js.hcaptcha.com/1/api.js"},
	ReCAPTCHA: {"https://www.google.com/recaptcha/api/siteverify", "https://www.google.com/recaptcha/api.js"},
}

// ParseProvider reads WAITROOM_HUMAN_CHECK: off (or empty), turnstile,
// hcaptcha or recaptcha, in any case.
func ParseProvider(s string) (Provider, error) {
	p := Provider(strings.ToLower(strings.TrimSpace(s)))
	if p == "" || p == Off {
		return Off, nil
	}
	if _, ok := providers[p]; !ok {
		return "", fmt.Errorf("humancheck: provider %q: want off, turnstile, hcaptcha or recaptcha", s)
	}
	return p, nil
}

// Options configure a Checker. Secret is never logged and never part of
// an error's text.
type Options struct {
	Provider Provider // Off: no check
	SiteKey  string   // WAITROOM_HUMAN_CHECK_SITEKEY: public, given to the widget
	Secret   string   // WAITROOM_HUMAN_CHECK_SECRET: for siteverify only
	// VerifyURL and ScriptURL default to the provider's own
	// (WAITROOM_HUMAN_CHECK_VERIFY_URL, WAITROOM_HUMAN_CHECK_SCRIPT_URL).
	// https only; http is allowed for a loopback host, for a local stand-in.
	VerifyURL string
	ScriptURL string
	// Hosts are the hostnames the room serves: a token solved on any other
	// site is refused, or a widget on a page of someone else's that uses
	// the same site key would mint tokens for this room.
	Hosts []string
	// Timeout bounds one siteverify call (DefaultTimeout).
	Timeout time.Duration
	// MaxInFlight bounds the concurrent siteverify calls
	// (DefaultMaxInFlight); a call beyond it is ErrUnavailable at once.
	MaxInFlight int
}

// WithDefaults is o with its unset fields filled: the provider's own
// addresses, DefaultTimeout and DefaultMaxInFlight.
func (o Options) WithDefaults() Options {
	if o.Provider == "" {
		o.Provider = Off
	}
	if e, ok := providers[o.Provider]; ok {
		if o.VerifyURL == "" {
			o.VerifyURL = e.verify
		}
		if o.ScriptURL == "" {
			o.ScriptURL = e.script
		}
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	return o
}

// Validate checks o with its defaults filled (WithDefaults). Off needs
// nothing else; a provider needs a site key, a secret, at least one host
// and usable addresses.
func (o Options) Validate() error {
	o = o.WithDefaults()
	if o.Provider == Off {
		return nil
	}
	if _, ok := providers[o.Provider]; !ok {
		return fmt.Errorf("humancheck: provider %q: want off, turnstile, hcaptcha or recaptcha", string(o.Provider))
	}
	var errs []error
	if strings.TrimSpace(o.SiteKey) == "" {
		errs = append(errs, errors.New("humancheck: WAITROOM_HUMAN_CHECK_SITEKEY is required"))
	}
	if strings.TrimSpace(o.Secret) == "" {
		errs = append(errs, errors.New("humancheck: WAITROOM_HUMAN_CHECK_SECRET is required"))
	}
	if len(o.Hosts) == 0 {
		errs = append(errs, errors.New("humancheck: Hosts: name at least one hostname the room serves"))
	}
	for _, h := range o.Hosts {
		if strings.TrimSpace(h) == "" || strings.ContainsAny(h, "/: ") && net.ParseIP(h) == nil {
			errs = append(errs, fmt.Errorf("humancheck: host %q: want a bare hostname", h))
		}
	}
	if err := checkURL("WAITROOM_HUMAN_CHECK_VERIFY_URL", o.VerifyURL); err != nil {
		errs = append(errs, err)
	}
	if err := checkURL("WAITROOM_HUMAN_CHECK_SCRIPT_URL", o.ScriptURL); err != nil {
		errs = append(errs, err)
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("humancheck: timeout %s: want more than 0", o.Timeout))
	}
	if o.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("humancheck: max in flight %d: want more than 0", o.MaxInFlight))
	}
	return errors.Join(errs...)
}

// checkURL accepts an absolute https address, or http on a loopback host.
// The address itself is not repeated in the error: an operator may have
// put a credential in it.
func checkURL(name, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return fmt.Errorf("humancheck: %s: want an absolute https address", name)
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && loopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("humancheck: %s: want https (http only on a loopback host)", name)
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Origin is the scheme and host of a script address, as a
// Content-Security-Policy names a source ("https://js.hcaptcha.com"); ""
// when raw is not absolute.
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// The environment variables FromEnv reads.
const (
	EnvProvider  = "WAITROOM_HUMAN_CHECK"
	EnvSiteKey   = "WAITROOM_HUMAN_CHECK_SITEKEY"
	EnvSecret    = "WAITROOM_HUMAN_CHECK_SECRET"
	EnvVerifyURL = "WAITROOM_HUMAN_CHECK_VERIFY_URL"
	EnvScriptURL = "WAITROOM_HUMAN_CHECK_SCRIPT_URL"
)

// FromEnv reads the WAITROOM_HUMAN_CHECK variables through getenv. Hosts
// (the room's public hostnames), Timeout and MaxInFlight are the
// caller's to set before New, which validates the whole.
func FromEnv(getenv func(string) string) (Options, error) {
	p, err := ParseProvider(getenv(EnvProvider))
	if err != nil {
		return Options{}, err
	}
	return Options{
		Provider:  p,
		SiteKey:   strings.TrimSpace(getenv(EnvSiteKey)),
		Secret:    strings.TrimSpace(getenv(EnvSecret)),
		VerifyURL: strings.TrimSpace(getenv(EnvVerifyURL)),
		ScriptURL: strings.TrimSpace(getenv(EnvScriptURL)),
	}, nil
}

// String shows o without its secret, for a %v in a log or an error.
func (o Options) String() string {
	return fmt.Sprintf("{Provider:%s SiteKey:%s Secret:%s VerifyURL:%s ScriptURL:%s Hosts:%v Timeout:%s MaxInFlight:%d}",
		o.Provider, o.SiteKey, redacted(o.Secret), o.VerifyURL, o.ScriptURL, o.Hosts, o.Timeout, o.MaxInFlight)
}

// LogValue is o for slog, without its secret.
func (o Options) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("provider", string(o.Provider)), slog.String("sitekey", o.SiteKey),
		slog.String("secret", redacted(o.Secret)), slog.String("verify_url", o.VerifyURL),
		slog.String("script_url", o.ScriptURL), slog.Any("hosts", o.Hosts),
		slog.Duration("timeout", o.Timeout), slog.Int("max_in_flight", o.MaxInFlight))
}

func redacted(secret string) string {
	if secret == "" {
		return ""
	}
	return "[redacted]"
}
