package reqcheck

import (
	"math/rand/v2"
	"net/url"
	"testing"

	"github.com/waitroom/waitroom/internal/hygiene/reqcheck/pathtest"
)

func TestCleanPath(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" means ErrAmbiguousPath
	}{
		{"/", "/"},
		{"/order", "/order"},
		{"/static/app.js", "/static/app.js"},
		{"/static/", "/static/"},
		{"/static/../order", "/order"},
		{"/static/./x", "/static/x"},
		{"/static//x", "/static/x"},
		{"//evil.example/x", "/evil.example/x"},
		{"/static/x/..", "/static/"},
		{"/static/x/.", "/static/x/"},
		{"/../../order", "/order"},
		{"/order.", "/order."},
		{"/%41%42c", "/ABc"},
		{"/a%20b", "/a b"},
		{"/sale;jsessionid=1/x", "/sale;jsessionid=1/x"},
		{"/static/%2e%2e/order", ""},
		{"/static/%2E%2E/order", ""},
		{"/static/.%2e/order", ""},
		{"/static/..%2forder", ""},
		{"/static/..%2Forder", ""},
		{"/static%2f..%2forder", ""},
		{"/static/..%5corder", ""},
		{"/static/..\\order", ""},
		{"/static/%252e%252e/order", ""},
		{"/static/%25", ""},
		{"/static/%00/x", ""},
		{"/static/\x00", ""},
		{"/static/%0a", ""},
		{"/static/..;/order", ""},
		{"/static/.;/order", ""},
		{"/static/;x/../order", ""},
		{"/static/.../order", ""},
		{"/static/..%20/order", ""},
		{"/static/%c0%ae%c0%ae/order", ""},
		{"/static/%", ""},
		{"/static/%g1", ""},
		{"static/x", ""},
		{"", ""},
	} {
		got, err := CleanPath(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("CleanPath(%q) = %q, want ErrAmbiguousPath", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestCleanPathProperty checks, over generated paths, what a gate relies
// on: a path CleanPath accepts and the gate lets through without a pass,
// forwarded in its clean form, resolves under every known server's rules
// to a path that is bypassed too; a canonical path does so as sent; and
// cleaning is idempotent.
func TestCleanPathProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var accepted, refused int
	for range 200000 {
		raw := pathtest.Generate(rng, 8)
		clean, err := CleanPath(raw)
		if err != nil {
			refused++
			continue
		}
		accepted++
		fwd := (&url.URL{Path: clean}).EscapedPath()
		if again, err := CleanPath(fwd); err != nil || again != clean {
			t.Fatalf("%q: clean %q, forwarded %q cleans to %q, %v", raw, clean, fwd, again, err)
		}
		for _, r := range pathtest.Resolutions(fwd) {
			if pathtest.Bypassed(clean) && !pathtest.Bypassed(r) {
				t.Fatalf("%q: the gate bypassed %q, but forwarded as %q it resolves to %q", raw, clean, fwd, r)
			}
		}
		if IsCanonical(raw) {
			for _, r := range pathtest.Resolutions(raw) {
				if pathtest.Bypassed(clean) && !pathtest.Bypassed(r) {
					t.Fatalf("canonical %q, bypassed, resolves to %q", raw, r)
				}
			}
		}
	}
	if accepted < 10000 || refused < 10000 {
		t.Fatalf("generator too one-sided: %d accepted, %d refused", accepted, refused)
	}
	t.Logf("%d accepted, %d refused", accepted, refused)
}

func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/static/../order", "/static/%2e%2e/order", "/static/..;/x", "//evil/x", "/a/b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		clean, err := CleanPath(raw)
		if err != nil {
			return
		}
		fwd := (&url.URL{Path: clean}).EscapedPath()
		if again, err := CleanPath(fwd); err != nil || again != clean {
			t.Fatalf("%q: clean %q not stable (%q, %v)", raw, clean, again, err)
		}
		for _, r := range pathtest.Resolutions(fwd) {
			if pathtest.Bypassed(clean) && !pathtest.Bypassed(r) {
				t.Fatalf("%q: the gate bypassed %q, but forwarded as %q it resolves to %q", raw, clean, fwd, r)
			}
		}
	})
}
