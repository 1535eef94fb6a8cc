// Package crossorigin keeps other sites out of the public API's state changes
// (CSRF) and lets the operator open it to named origins (CORS).
//
// A browser request that changes state (enter, leave) must come from
// waitroom's own pages or from an origin listed in WAITROOM_CORS_ORIGINS:
// Sec-Fetch-Site says where a modern browser's request comes from, and
// Origin does for the others. Requests with neither come from no browser
// (an app, curl), which other sites cannot make a visitor send. Enter also
// requires Content-Type: application/json, which a page on another site
// cannot send without a CORS preflight, which only listed origins pass.
package crossorigin

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// Policy is the set of other origins allowed to call the public API.
type Policy struct {
	allowed map[string]bool // "https://shop.example"
}

// New returns the policy allowing origins ("https://shop.example", a
// scheme and host, no path); none keeps the API to waitroom's own pages.
func New(origins []string) (*Policy, error) {
	p := &Policy{allowed: map[string]bool{}}
	for _, o := range origins {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
			u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("origin: %q is not an origin (scheme://host[:port])", o)
		}
		p.allowed[strings.ToLower(u.Scheme+"://"+u.Host)] = true
	}
	return p, nil
}

// SameSite reports whether r may change state: it comes from no browser,
// from this site, or from an allowed origin.
func (p *Policy) SameSite(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none": // "none": typed by the user, not sent by a page
		return true
	case "same-site", "cross-site":
		return p.allowed[strings.ToLower(origin)]
	}
	// An older browser, or no browser: Origin, when sent, must be this
	// host or an allowed origin.
	if origin == "" {
		return true
	}
	if p.allowed[strings.ToLower(origin)] {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// SameOrigin reports whether r comes from no browser or from a page of
// this very origin: stricter than SameSite, for the admin API, which only
// its own back office page calls. No origin is allowed beside its own, and
// a sibling subdomain (same-site) is refused too.
//
// Sec-Fetch-Site decides when a browser sends it (a page cannot forge it);
// any value but same-origin and none is refused, so a value a future
// browser adds is refused rather than guessed at. Without it, Origin, when
// sent, must name this host, over https when the connection is TLS. Behind
// a proxy that ends TLS the scheme cannot be known (X-Forwarded-Proto is
// not trusted), so either is taken there; the host must match all the same.
func SameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin" || site == "none" // "none": typed by the user, not sent by a page
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
		return false
	}
	if r.TLS != nil {
		return u.Scheme == "https"
	}
	return u.Scheme == "https" || u.Scheme == "http"
}

// JSONBody reports whether r declares a JSON body (Content-Type
// application/json, parameters allowed).
func JSONBody(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if strings.EqualFold(ct, "application/json") {
		return true // what clients send, read without ParseMediaType's map
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// CORS answers preflights and marks responses for allowed origins; for any
// other origin it adds nothing, so browsers keep the API closed to it. No
// credentials: pages on other origins use bearer tokens (place_token),
// never waitroom's cookies.
func (p *Policy) CORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !p.allowed[strings.ToLower(origin)] {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		// Date: the agent keeps the server's clock from it, for the
		// line's document and the countdowns.
		h.Set("Access-Control-Expose-Headers", "Retry-After, Date")
		next.ServeHTTP(w, r)
	})
}
