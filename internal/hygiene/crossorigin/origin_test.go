package crossorigin

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestSameSite(t *testing.T) {
	p, err := New([]string{"https://shop.example", " ", "http://localhost:3000"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		site, origin string
		want         bool
	}{
		{"no browser", "", "", true},
		{"own page", "same-origin", "https://wait.example", true},
		{"typed in the address bar", "none", "", true},
		{"another site", "cross-site", "https://evil.example", false},
		{"a sibling subdomain", "same-site", "https://evil.wait.example", false},
		{"an allowed origin", "cross-site", "https://shop.example", true},
		{"an allowed origin, other case", "cross-site", "HTTPS://SHOP.EXAMPLE", true},
		{"old browser, own host", "", "https://wait.example", true},
		{"old browser, another site", "", "https://evil.example", false},
		{"old browser, null origin", "", "null", false},
		{"old browser, allowed origin", "", "http://localhost:3000", true},
	} {
		r := httptest.NewRequest("POST", "https://wait.example/api/v1/queues/q/enter", nil)
		if tc.site != "" {
			r.Header.Set("Sec-Fetch-Site", tc.site)
		}
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if got := p.SameSite(r); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{"shop.example", "https://shop.example/path", "ftp://x", "https://", "https://u@x"} {
		if _, err := New([]string{bad}); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}

// The admin API's check: only its own origin, whatever the CORS policy
// allows, and https only when the connection is TLS.
func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		name         string
		site, origin string
		tls          bool
		want         bool
	}{
		{"no browser", "", "", false, true},
		{"own page", "same-origin", "https://wait.example", false, true},
		{"typed in the address bar", "none", "", false, true},
		{"another site", "cross-site", "https://evil.example", false, false},
		{"another site without Origin", "cross-site", "", false, false},
		{"a sibling subdomain", "same-site", "https://evil.wait.example", false, false},
		{"an unknown Sec-Fetch-Site", "same-galaxy", "", false, false},
		{"old browser, own host", "", "https://wait.example", false, true},
		{"old browser, own host, other case", "", "HTTPS://WAIT.EXAMPLE", false, true},
		{"old browser, own host behind a TLS proxy", "", "http://wait.example", false, true},
		{"old browser, own host, plain http to a TLS server", "", "http://wait.example", true, false},
		{"old browser, own host over TLS", "", "https://wait.example", true, true},
		{"old browser, another site", "", "https://evil.example", false, false},
		{"old browser, own host on another port", "", "https://wait.example:8443", false, false},
		{"old browser, another scheme", "", "ftp://wait.example", false, false},
		{"old browser, null origin", "", "null", false, false},
	} {
		r := httptest.NewRequest("PATCH", "https://wait.example/admin/v1/queues/q", nil)
		if !tc.tls {
			r.TLS = nil
		}
		if tc.site != "" {
			r.Header.Set("Sec-Fetch-Site", tc.site)
		}
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if got := SameOrigin(r); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestJSONBody(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json": true, "application/json; charset=utf-8": true, "Application/JSON": true,
		"": false, "text/plain": false, "application/x-www-form-urlencoded": false, "multipart/form-data; boundary=x": false,
		"application/json-patch+json": false, "APPLICATION/JSON": true, "application/json ": true, "application/json;": true,
		"application/jsonx": false, " application/json": true,
	} {
		r := httptest.NewRequest("POST", "/", nil)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		if got := JSONBody(r); got != want {
			t.Errorf("%q: %v, want %v", ct, got, want)
		}
	}
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("Content-Type", "application/json")
	if allocs := testing.AllocsPerRun(100, func() { JSONBody(r) }); allocs != 0 {
		t.Errorf("application/json: %v allocations, want 0", allocs)
	}
}

func TestCORS(t *testing.T) {
	p, _ := New([]string{"https://shop.example"})
	h := p.CORS(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	pre := httptest.NewRequest("OPTIONS", "/api/v1/queues/q/enter", nil)
	pre.Header.Set("Origin", "https://shop.example")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, pre)
	if w.Code != 204 || w.Header().Get("Access-Control-Allow-Origin") != "https://shop.example" ||
		w.Header().Get("Access-Control-Allow-Headers") == "" || w.Header().Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("preflight of an allowed origin: %d %v", w.Code, w.Header())
	}
	pre.Header.Set("Origin", "https://evil.example")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, pre)
	if w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("another origin got %v", w.Header())
	}
	get := httptest.NewRequest("GET", "/api/v1/queues/q", nil)
	get.Header.Set("Origin", "https://shop.example")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, get)
	if w.Code != 200 || w.Header().Get("Access-Control-Allow-Origin") != "https://shop.example" {
		t.Fatalf("a request from an allowed origin: %d %v", w.Code, w.Header())
	}
}

// Variants of an allowed origin (another port, scheme, subdomain, suffix,
// a path, a trailing slash, "null", random bytes) never get CORS headers:
// only the origin itself, in any case, does, and an answer to it exposes
// Date (the agent's clock) and Retry-After.
func TestCORSOnlyConfiguredOrigins(t *testing.T) {
	p, _ := New([]string{"https://shop.example"})
	h := p.CORS(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	ask := func(origin string) http.Header {
		r := httptest.NewRequest("GET", "/api/v1/queues/q/status", nil)
		r.Header.Set("Origin", origin)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Header()
	}
	for _, o := range []string{"https://shop.example", "HTTPS://Shop.Example"} {
		got := ask(o)
		if got.Get("Access-Control-Allow-Origin") != o || got.Get("Access-Control-Expose-Headers") != "Retry-After, Date" {
			t.Fatalf("%s: %v", o, got)
		}
	}
	variants := []string{"http://shop.example", "https://shop.example:444", "https://a.shop.example", "https://shop.example.evil",
		"https://shop.example/", "https://shop.examplex", "null", "", "https://shop.example\x00", " https://shop.example"}
	rng := rand.New(rand.NewPCG(39, 1))
	const letters = "abcdefghijklmnopqrstuvwxyz.:/-_%0123456789"
	for range 500 {
		b := []byte("https://shop.example")
		switch rng.IntN(3) {
		case 0: // one byte changed
			b[rng.IntN(len(b))] = letters[rng.IntN(len(letters))]
		case 1: // something added
			b = append(b, letters[rng.IntN(len(letters))])
		default: // something removed
			i := rng.IntN(len(b))
			b = append(b[:i], b[i+1:]...)
		}
		if !strings.EqualFold(string(b), "https://shop.example") {
			variants = append(variants, string(b))
		}
	}
	for _, o := range variants {
		if got := ask(o); got.Get("Access-Control-Allow-Origin") != "" || got.Get("Access-Control-Expose-Headers") != "" {
			t.Fatalf("%q got CORS headers: %v", o, got)
		}
	}
}
