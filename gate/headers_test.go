package gate_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
)

// The middleware takes a pass from an order page's own API calls
// (Authorization: Bearer in any case and spacing, or X-Waitroom-Pass) and
// refuses a request whose headers carry more than one: generated header
// sets, each compared with a model, and what the handler behind sees is
// exactly the pass that was checked.
func TestMiddlewareHeaderPassesProperty(t *testing.T) {
	w := newWaitroom(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g, err := gate.New(ctx, gate.Options{Queue: "default", Issuer: "https://waitroom.test", JWKSURL: w.srv.URL + "/.well-known/jwks.json"})
	if err != nil {
		t.Fatal(err)
	}
	valid := w.issue(t, "default", time.Now().Add(time.Hour))
	tokens := []string{valid, w.issue(t, "other", time.Now().Add(time.Hour)), w.issue(t, "default", time.Now().Add(-time.Minute)),
		valid[:len(valid)-4] + "AAAA", "garbage", ""}
	var seen *http.Request
	h := g.Handler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { seen = r }))
	rng := rand.New(rand.NewPCG(39, 2))
	let := 0
	for i := range 2000 {
		pick := func() string {
			if rng.IntN(2) == 0 {
				return valid
			}
			return tokens[rng.IntN(len(tokens))]
		}
		r := httptest.NewRequest("GET", "/api/order", nil)
		var bearers, passes []string
		auth := 0
		for range []int{0, 1, 1, 2}[rng.IntN(4)] {
			auth++
			if rng.IntN(5) == 0 {
				r.Header.Add("Authorization", "Basic dXNlcjpwYXNz")
				continue
			}
			p := pick()
			bearers = append(bearers, p)
			r.Header.Add("Authorization", []string{"Bearer", "bearer", "BEARER"}[rng.IntN(3)]+[]string{" ", "\t", "  \t"}[rng.IntN(3)]+p+[]string{"", " ", "\t"}[rng.IntN(3)])
		}
		for range []int{0, 1, 1, 2}[rng.IntN(4)] {
			p := pick()
			if len(bearers) == 1 && rng.IntN(2) == 0 {
				p = bearers[0]
			}
			passes = append(passes, p)
			r.Header.Add(gate.HeaderPass, p)
		}
		var want bool
		switch {
		case len(bearers) > 0 && auth > 1, len(passes) > 1, len(bearers) == 1 && len(passes) == 1 && bearers[0] != passes[0]:
		case len(bearers) == 1:
			want = bearers[0] == valid
		case len(passes) == 1:
			want = passes[0] == valid
		}
		seen = nil
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if got := seen != nil; got != want {
			t.Fatalf("case %d (Authorization %q, X-Waitroom-Pass %q): let in %v, want %v (%d %s)", i, r.Header.Values("Authorization"), passes, got, want, rec.Code, rec.Body)
		}
		if !want {
			continue
		}
		let++
		if tok, _ := gate.PassFromContext(seen.Context()); tok != valid {
			t.Fatalf("case %d: the handler got pass %q", i, tok)
		}
		for _, v := range seen.Header.Values("Authorization") {
			if b, ok := reqcheck.BearerScheme(v); ok && b != valid {
				t.Fatalf("case %d: the handler sees an unchecked bearer %q", i, v)
			}
		}
		for _, v := range seen.Header.Values(gate.HeaderPass) {
			if v != valid {
				t.Fatalf("case %d: the handler sees an unchecked X-Waitroom-Pass %q", i, v)
			}
		}
	}
	if let < 200 {
		t.Fatalf("only %d of 2000 let in: the run proves little", let)
	}
	// The refusal of two passes names it.
	r := httptest.NewRequest("GET", "/api/order", nil)
	r.Header.Set("Authorization", "Bearer "+valid)
	r.Header.Set(gate.HeaderPass, tokens[1])
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != 401 || !strings.Contains(rec.Body.String(), "invalid_pass") || rec.Header().Get("Set-Cookie") != "" {
		t.Fatalf("disagreeing headers: %d %s %q", rec.Code, rec.Body, rec.Header().Get("Set-Cookie"))
	}
}
