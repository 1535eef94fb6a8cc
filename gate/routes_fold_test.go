package gate_test

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/waitroom/waitroom/gate"
	"golang.org/x/text/unicode/norm"
)

// Route matching folded ASCII only, so with the routes
// /sale/=sale,/=default a default pass opened "/ſale/item" (U+017F),
// which an upstream that folds Unicode serves as /sale/item; without the
// catch-all, no pass was needed at all.

// foldsTo is, for each byte a route prefix may hold ([a-z0-9/._-]), the
// non-ASCII runes whose simple case folding orbit holds it (in either
// case) or whose NFKC form is it: the oracle of the property below,
// computed here from the unicode tables rather than taken from the
// gate's own table.
var foldsTo = sync.OnceValue(func() map[byte][]rune {
	m := make(map[byte][]rune)
	add := func(c byte, r rune) {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("/._-", c) >= 0 {
			m[c] = append(m[c], r)
		}
	}
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < utf8.RuneSelf {
				add(byte(f), r)
				break
			}
		}
		if n := norm.NFKC.String(string(r)); len(n) == 1 && n[0] < utf8.RuneSelf {
			add(n[0], r)
		}
	}
	return m
})

// foldedPaths is every path that puts, in one position of prefix (but
// the first: a request's path begins with "/"), a rune that folds into
// the byte there, followed by "item".
func foldedPaths(prefix string) []string {
	var out []string
	for i := 1; i < len(prefix); i++ {
		for _, r := range foldsTo()[prefix[i]] {
			out = append(out, prefix[:i]+string(r)+prefix[i+1:]+"item")
		}
	}
	return out
}

// The three doors on one table: the middleware (waitroom's reverse-proxy
// gate is this same Handler), /gate/verify and /gate/refused. For every
// rune that folds into a byte of a route prefix, in every position of
// each prefix, and for generated paths with several such runes: the path
// is refused with invalid_path, or judged in the prefix's own room; a
// pass for the catch-all never opens it, and without a catch-all nothing
// opens it without the prefix's pass.
func TestRoutesUnicodeFoldsProperty(t *testing.T) {
	w := newWaitroom(t)
	def := w.issue(t, "default", time.Now().Add(time.Hour))
	for _, c := range []struct {
		name, routes, catchAll string
	}{
		{"with a catch-all", "/sale/=sale,/sale/concert-a/=concert-a", "default"},
		{"without a catch-all", "/sale/=sale,/sale/concert-a/=concert-a", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			routes, err := gate.ParseRoutes(c.routes)
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			g, err := gate.New(ctx, gate.Options{Queue: c.catchAll, Routes: routes, Issuer: "https://waitroom.test",
				JWKSURL: w.srv.URL + "/.well-known/jwks.json", WaitingPage: "/q/{queue}", Bypass: []string{"/static/"}})
			if err != nil {
				t.Fatal(err)
			}
			reached := 0
			h := g.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached++ }))
			paths := map[string]string{} // path -> the room of the prefix it folds into
			for _, r := range routes {
				for _, p := range foldedPaths(r.Prefix) {
					paths[p] = r.Queue
				}
			}
			for p, room := range generatedFolds(rand.New(rand.NewPCG(26, 12)), 400) {
				paths[p] = room
			}
			refused := 0
			for p, room := range paths {
				escaped := (&url.URL{Path: p}).EscapedPath()
				for _, cookie := range []string{"", gate.CookieName("default", true) + "=" + def} {
					before := reached
					rr := doorGet(h, escaped, cookie)
					switch {
					case rr.Code == http.StatusBadRequest && strings.Contains(rr.Body.String(), "invalid_path"):
						refused++
					case reached != before:
						t.Fatalf("%q (%U…) with cookie %.20q reached the site; it folds into room %s", p, []rune(p), cookie, room)
					case rr.Header().Get("Location") != "" && !strings.HasPrefix(rr.Header().Get("Location"), "/q/"+room+"?"):
						t.Fatalf("%q: sent to %q, not to room %s's waiting page", p, rr.Header().Get("Location"), room)
					}
					if st := doorVerify(g.ForwardAuth, escaped, cookie); st == http.StatusNoContent {
						t.Fatalf("/gate/verify: %q with cookie %.20q: 204; it folds into room %s", p, cookie, room)
					}
					if rr := doorVerifyRec(g.Refused, escaped, cookie); rr.Code != http.StatusBadRequest &&
						!strings.HasPrefix(rr.Header().Get("Location"), "/q/"+room+"?") {
						t.Fatalf("/gate/refused: %q: %d %q, want 400 or room %s's waiting page", p, rr.Code, rr.Header().Get("Location"), room)
					}
				}
			}
			t.Logf("%d folded paths, %d refusals with invalid_path", len(paths), refused)
			if len(paths) < 200 || refused == 0 {
				t.Fatalf("the run proves nothing: %d paths, %d refused", len(paths), refused)
			}
		})
	}
}

// generatedFolds is n paths under the sale's prefixes with a random
// number of their bytes replaced by runes that fold into them, and what
// follows them random too; each mapped to the room of its prefix.
func generatedFolds(rng *rand.Rand, n int) map[string]string {
	out := map[string]string{}
	prefixes := map[string]string{"/sale/": "sale", "/sale/concert-a/": "concert-a"}
	tails := []string{"", "item", "x/y", "ſ", "ｉｔｅｍ", "a．b"}
	for len(out) < n {
		for prefix, room := range prefixes {
			b := []rune(prefix)
			changed := false
			for i := 1; i < len(b); i++ {
				if rs := foldsTo()[byte(b[i])]; len(rs) > 0 && rng.IntN(3) == 0 {
					b[i] = rs[rng.IntN(len(rs))]
					changed = true
				}
			}
			if changed {
				out[string(b)+tails[rng.IntN(len(tails))]] = room
			}
		}
	}
	return out
}

// The report's example and a bypass escape: "/ſale/item" with a default
// pass, and "/static/．．／order" (full-width dots and solidus, which a
// folding server resolves to /order), are 400 invalid_path; a path whose
// non-ASCII letters fold within the room it is in, or into none, passes
// as before.
func TestRoutesUnicodeFoldExamples(t *testing.T) {
	w := newWaitroom(t)
	def := w.issue(t, "default", time.Now().Add(time.Hour))
	sale := w.issue(t, "sale", time.Now().Add(time.Hour))
	routes, _ := gate.ParseRoutes("/sale/=sale")
	g, err := gate.New(t.Context(), gate.Options{Queue: "default", Routes: routes, Issuer: "https://waitroom.test",
		JWKSURL: w.srv.URL + "/.well-known/jwks.json", WaitingPage: "/q/{queue}", Bypass: []string{"/static/"}})
	if err != nil {
		t.Fatal(err)
	}
	h := g.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defCookie, saleCookie := gate.CookieName("default", true)+"="+def, gate.CookieName("sale", true)+"="+sale
	for _, c := range []struct {
		path, cookie string
		want         int
	}{
		{"/%C5%BFale/item", defCookie, http.StatusBadRequest},
		{"/%C5%BFale/item", "", http.StatusBadRequest},
		{"/%EF%BD%93ale/item", defCookie, http.StatusBadRequest},                // full-width s
		{"/static/%EF%BC%8E%EF%BC%8E%EF%BC%8Forder", "", http.StatusBadRequest}, // ．．／
		{"/sale/%C5%BFhoes", saleCookie, http.StatusOK},                         // folds within the sale
		{"/stra%C3%9Fe", defCookie, http.StatusOK},                              // ß is "ss": no route there
		{"/caf%C3%A9", defCookie, http.StatusOK},                                // folds into no ASCII
		{"/sale/item", saleCookie, http.StatusOK},
	} {
		if rr := doorGet(h, c.path, c.cookie); rr.Code != c.want {
			t.Errorf("%s: %d %s, want %d", c.path, rr.Code, rr.Body, c.want)
		}
	}
}

func doorGet(h http.Handler, escaped, cookie string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "http://shop.example"+escaped, nil)
	r.Header.Set("Accept", "text/html")
	if cookie != "" {
		r.Header.Set("Cookie", cookie)
	}
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, r)
	return rr
}

func doorVerifyRec(door http.HandlerFunc, escaped, cookie string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/gate/verify", nil)
	r.Host = "shop.example"
	r.Header.Set(gate.HeaderOriginalURI, escaped)
	r.Header.Set("Accept", "text/html")
	if cookie != "" {
		r.Header.Set("Cookie", cookie)
	}
	rr := httptest.NewRecorder()
	door(rr, r)
	return rr
}

func doorVerify(door http.HandlerFunc, escaped, cookie string) int {
	return doorVerifyRec(door, escaped, cookie).Code
}
