package gate_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck/pathtest"
)

// newPathGate is a gate with Bypass pathtest.Bypass in front of next.
func newPathGate(t *testing.T, w *waitroom) *gate.Gate {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g, err := gate.New(ctx, gate.Options{
		Queue:       "default",
		Issuer:      "https://waitroom.test",
		JWKSURL:     w.srv.URL + "/.well-known/jwks.json",
		WaitingPage: "/q/default",
		Bypass:      []string{pathtest.Bypass},
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// withSub names the pass's holder in X-Waitroom-Sub, as waitroom's own
// proxy does, for the recorder to see.
func withSub(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := gate.FromContext(r.Context()); ok {
			r.Header.Set(gate.HeaderSub, c.Subject)
		} else {
			r.Header.Del(gate.HeaderSub)
		}
		next.ServeHTTP(w, r)
	})
}

// No generated path reaches the handler behind the gate middleware
// without a pass unless every known server's resolution of the path it
// sees is under the bypass prefix; with the gate in front of an
// http.ServeMux (as the demo order page has it) and behind one.
func TestMiddlewarePathsProperty(t *testing.T) {
	w := newWaitroom(t)
	tok := w.issue(t, "default", time.Now().Add(time.Hour))
	for name, build := range map[string]func(*gate.Gate, http.Handler) http.Handler{
		"gate in front of ServeMux": func(g *gate.Gate, rec http.Handler) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("/", rec)
			return g.Handler(withSub(mux))
		},
		"ServeMux in front of gate": func(g *gate.Gate, rec http.Handler) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("/", g.Handler(withSub(rec)))
			return mux
		},
	} {
		t.Run(name, func(t *testing.T) {
			rec := &pathtest.Recorder{}
			srv := httptest.NewServer(build(newPathGate(t, w), rec))
			t.Cleanup(srv.Close)
			addr := strings.TrimPrefix(srv.URL, "http://")
			rng := rand.New(rand.NewPCG(7, 11))
			const n = 3000
			var withPass int
			for i := range n {
				var hdr []string
				if i%5 == 0 {
					hdr = []string{"Cookie", gate.CookieName("default", true) + "=" + tok}
					withPass++
				}
				if _, err := pathtest.Get(addr, pathtest.Generate(rng, 6), hdr...); err != nil {
					t.Fatal(err)
				}
			}
			passless := rec.Check(t)
			reached := len(rec.Seen())
			t.Logf("%d requests, %d reached the handler, %d of them without a pass", n, reached, passless)
			if passless == 0 || reached-passless == 0 {
				t.Fatalf("the run proves nothing: %d passless and %d with a pass reached the handler", passless, reached-passless)
			}
		})
	}
}

// A pass link only ever redirects to a path on this site: generated
// links whose path would send a browser elsewhere are 400 invalid_return
// and set no cookie; every redirect that does happen is a same-site path.
func TestPassLinkRedirectsOnlyToThisSite(t *testing.T) {
	w := newWaitroom(t)
	g := newPathGate(t, w)
	h := g.Handler(http.NotFoundHandler())
	prefixes := []string{"//evil.example", "///evil.example", "/\\evil.example", "//evil.example:443", "//user@evil.example", "/%2f/evil.example", "/%5cevil.example", "//%65vil.example"}
	for _, p := range prefixes {
		for _, rest := range []string{"", "/", "/x", "/x?a=1&"} {
			target := p + rest
			if !strings.Contains(target, "?") {
				target += "?"
			}
			// A fresh pass each time: a claimed one would not redirect.
			target += "wr_pass=" + url.QueryEscape(w.issue(t, "default", time.Now().Add(time.Hour)))
			r := get(h, target)
			loc := r.Header().Get("Location")
			if r.Code == http.StatusSeeOther && !reqcheck.SameSitePath(loc) {
				t.Errorf("%q: redirected to %q", target, loc)
			}
			if r.Header().Get("Set-Cookie") != "" {
				t.Errorf("%q: set a cookie (%d)", target, r.Code)
			}
			if r.Code != http.StatusBadRequest {
				t.Errorf("%q: %d, want 400", target, r.Code)
			}
			var body struct{ Error struct{ Code string } }
			_ = json.Unmarshal(r.Body.Bytes(), &body)
			if c := body.Error.Code; c != "invalid_return" && c != "invalid_path" {
				t.Errorf("%q: code %q", target, c)
			}
		}
	}
	// The path as it was asked, cleaned, keeps its query.
	if r := get(h, "/a/./b?x=1&wr_pass="+url.QueryEscape(w.issue(t, "default", time.Now().Add(time.Hour)))); r.Code != http.StatusSeeOther || r.Header().Get("Location") != "/a/b?x=1" {
		t.Fatalf("same-site pass-link exchange: %d %q", r.Code, r.Header().Get("Location"))
	}
}

// One pass link, opened by five browsers, admits one: the first
// exchange takes it; the rest are treated as if no pass had been given.
func TestPassLinkIsSingleUse(t *testing.T) {
	w := newWaitroom(t)
	h := newPathGate(t, w).Handler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.RawQuery, "wr_pass") {
			t.Errorf("the pass reached the handler in %q", r.URL.RawQuery)
		}
		rw.WriteHeader(http.StatusOK)
	}))
	link := "/order?wr_pass=" + url.QueryEscape(w.issue(t, "default", time.Now().Add(time.Hour)))
	admitted := 0
	for range 5 {
		r := get(h, link)
		if strings.Contains(r.Header().Get("Set-Cookie"), gate.CookieName("default", true)+"=") {
			admitted++
			continue
		}
		if r.Code != http.StatusSeeOther || !strings.HasPrefix(r.Header().Get("Location"), "/q/default?return=") {
			t.Errorf("a used link: %d %q, want the waiting page", r.Code, r.Header().Get("Location"))
		}
	}
	if admitted != 1 {
		t.Fatalf("one shared link admitted %d of 5 browsers, want 1", admitted)
	}
	// A POST never exchanges a pass link, and never passes the pass on.
	r := httptest.NewRequest("POST", "/order?a=1&wr_pass=x", nil)
	r.Header.Set("Cookie", gate.CookieName("default", true)+"="+w.issue(t, "default", time.Now().Add(time.Hour)))
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, r)
	if rr.Code != http.StatusOK {
		t.Fatalf("POST with a pass cookie and ?wr_pass: %d", rr.Code)
	}
}

// claimedElsewhere is a PassLinks on which every link was already
// exchanged (on another replica).
type claimedElsewhere struct{ asked int }

func (c *claimedElsewhere) Claim(context.Context, string, string, time.Time) (bool, error) {
	c.asked++
	return false, nil
}

// The pass cookie twice in one request (one planted) is refused outright.
func TestDuplicatePassCookie(t *testing.T) {
	w := newWaitroom(t)
	h := newPathGate(t, w).Handler(http.NotFoundHandler())
	tok := w.issue(t, "default", time.Now().Add(time.Hour))
	name := gate.CookieName("default", true)
	r := get(h, "/order", "Cookie", name+"="+tok+"; "+name+"=planted")
	if r.Code != http.StatusUnauthorized || !strings.Contains(r.Body.String(), `"invalid_pass"`) {
		t.Fatalf("two pass cookies: %d %s", r.Code, r.Body)
	}
	// The plain name is not read when cookies are Secure.
	if r := get(h, "/order", "Cookie", gate.CookieName("default", false)+"="+tok, "Accept", "application/json"); r.Code != http.StatusUnauthorized {
		t.Fatalf("plain cookie name: %d", r.Code)
	}
}
