package reqcheck

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestSameSitePath(t *testing.T) {
	for p, want := range map[string]bool{
		"/": true, "/order?event=7": true, "/a/b#c": true, "/%2F%2Fevil": true,
		"": false, "order": false, "//evil.example": false, "/\\evil.example": false, "https://evil.example/": false,
		"/a\\b": false, "/a\nb": false, "/a\x7f": false, "javascript:alert(1)": false, "/" + strings.Repeat("a", MaxReturnBytes): false,
	} {
		if got := SameSitePath(p); got != want {
			t.Errorf("SameSitePath(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestBearerToken(t *testing.T) {
	for h, want := range map[string]string{"Bearer abc": "abc", "bearer abc ": "abc", "BEARER x.y": "x.y", "Basic abc": "", "Bearer ": "", "": ""} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", h)
		got, ok := BearerToken(r)
		if got != want || ok != (want != "") {
			t.Errorf("BearerToken(%q) = %q, %v", h, got, ok)
		}
	}
}

func TestBearerScheme(t *testing.T) {
	for in, want := range map[string]string{
		"Bearer abc": "abc", "bearer abc": "abc", "BEARER\tabc": "abc", "Bearer  \t abc \t": "abc", " Bearer abc": "abc", "Bearer": "",
	} {
		if got, ok := BearerScheme(in); !ok || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"Basic abc", "Bearerx abc", "Bearer:abc", "Token abc", "", "Bear abc"} {
		if got, ok := BearerScheme(in); ok {
			t.Errorf("%q read as a bearer %q", in, got)
		}
	}
}
