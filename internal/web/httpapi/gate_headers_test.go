package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
	"github.com/waitroom/waitroom/internal/testkit/clientaddr"
)

// An order page's own API calls carry the pass in Authorization: Bearer or
// X-Waitroom-Pass. These tests send generated spellings of those headers
// through the reverse-proxy gate and /gate/verify, and compare each answer
// with a model of what the gate must do.

// passVariants are passes of every kind for e's queue: the admitted one
// (valid) and passes that must never open it. Each name says what it is.
func passVariants(t *testing.T, e *env, valid string) map[string]string {
	t.Helper()
	c, err := e.passes.Verify(valid)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(valid, ".")
	edit := func(field string, value any) string {
		var m map[string]any
		raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
		_ = json.Unmarshal(raw, &m)
		m[field] = value
		out, _ := json.Marshal(m)
		return parts[0] + "." + base64.RawURLEncoding.EncodeToString(out) + "." + parts[2]
	}
	claims := jwt.MapClaims{"iss": testIssuer, "sub": c.Subject, "aud": e.queue, "exp": c.Expires.Unix(),
		"nbf": c.NotBefore.Unix(), "adm": c.AdmittedAt.UnixMilli(), "jti": "forged"}
	// Alg confusion: HS256 keyed with the public key as the JWKS publishes
	// it, under the signing key's kid.
	var jwks struct {
		Keys []struct {
			X string `json:"x"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(e.passes.Keys().JWKS(), &jwks); err != nil || len(jwks.Keys) == 0 {
		t.Fatalf("jwks: %v", err)
	}
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	hs.Header["kid"] = e.passes.Keys().SigningKID()
	confused, err := hs.SignedString([]byte(jwks.Keys[0].X))
	if err != nil {
		t.Fatal(err)
	}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	expired, _ := e.passes.Issue(e.queue, c.Subject, c.AdmittedAt, time.Now().Add(-time.Minute))
	otherQueue, _ := e.passes.Issue("other-"+e.queue, c.Subject, c.AdmittedAt, c.Expires)
	foreign, _ := newPasses(t).Issue(e.queue, c.Subject, c.AdmittedAt, c.Expires)
	return map[string]string{
		"valid":          valid,
		"expired":        expired,
		"other queue":    otherQueue,
		"forged sub":     edit("sub", "a:someone-else"),
		"another key":    foreign,
		"alg none":       none,
		"alg confusion":  confused,
		"garbage":        "not-a-pass",
		"empty":          "",
		"signature swap": parts[0] + "." + parts[1] + "." + strings.Split(foreign, ".")[2],
	}
}

// headerCase is one generated request: its Authorization and
// X-Waitroom-Pass lines, and the pass cookie (name of a variant, or "").
type headerCase struct {
	auth    []string // as sent
	bearers []string // the pass of each auth line that is a bearer, in any spelling
	passes  []string // X-Waitroom-Pass lines
	cookie  string   // a pass in the cookie, "" for none
}

func (h headerCase) header(e *env) http.Header {
	out := http.Header{"Accept": {"application/json"}}
	for _, a := range h.auth {
		out.Add("Authorization", a)
	}
	for _, p := range h.passes {
		out.Add(gate.HeaderPass, p)
	}
	if h.cookie != "" {
		out.Set("Cookie", e.passCookieName()+"="+h.cookie)
	}
	return out
}

// expect is the model: the pass the gate takes (ok) or why it refuses
// (the error code).
func (h headerCase) expect(valid string) (admitted bool, code string) {
	switch {
	case len(h.bearers) > 0 && len(h.auth) > 1, len(h.passes) > 1,
		len(h.bearers) == 1 && len(h.passes) == 1 && h.bearers[0] != h.passes[0]:
		return false, "invalid_pass"
	case len(h.bearers) == 1:
		return h.bearers[0] == valid, "pass_required"
	case len(h.passes) == 1:
		return h.passes[0] == valid, "pass_required"
	}
	return h.cookie == valid, "pass_required"
}

func (h headerCase) String() string {
	return fmt.Sprintf("auth %q, X-Waitroom-Pass %q, cookie %t", h.auth, h.passes, h.cookie != "")
}

// genHeaderCase draws a request from tokens: mostly one pass in one
// header, often the same pass in both, and sometimes two lines, two
// disagreeing passes, a bearer in an odd spelling, or another scheme.
func genHeaderCase(rng *rand.Rand, valid string, tokens []string) headerCase {
	pick := func() string {
		if rng.IntN(2) == 0 {
			return valid
		}
		return tokens[rng.IntN(len(tokens))]
	}
	var h headerCase
	schemes := []string{"Bearer", "bearer", "BEARER", "bEaReR"}
	seps := []string{" ", "  ", "\t", " \t "}
	tails := []string{"", " ", "\t", "  "}
	for range []int{0, 1, 1, 1, 2}[rng.IntN(5)] {
		switch rng.IntN(6) {
		case 0:
			h.auth = append(h.auth, []string{"Basic dXNlcjpwYXNz", "Token abc", "Bearerx abc", "Bearer:abc"}[rng.IntN(4)])
		case 1:
			h.auth = append(h.auth, "Bearer") // a bearer with no token
			h.bearers = append(h.bearers, "")
		default:
			p := pick()
			h.auth = append(h.auth, schemes[rng.IntN(len(schemes))]+seps[rng.IntN(len(seps))]+p+tails[rng.IntN(len(tails))])
			h.bearers = append(h.bearers, p)
		}
	}
	for range []int{0, 0, 1, 1, 2}[rng.IntN(5)] {
		p := pick()
		if len(h.bearers) == 1 && rng.IntN(2) == 0 {
			p = h.bearers[0] // the same pass in both headers
		}
		h.passes = append(h.passes, p)
	}
	if rng.IntN(3) == 0 {
		h.cookie = pick()
	}
	return h
}

func sendWith(t *testing.T, e *env, method, path string, h http.Header) response {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

// Generated header spellings through the reverse-proxy gate and
// /gate/verify: each is let in exactly when the model says so, refused
// with the model's code otherwise, and what reaches the upstream is
// exactly the pass that was checked (X-Waitroom-Pass), with no bearer
// left in any spelling and another scheme's Authorization untouched.
func TestGateHeaderPassesProperty(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	u, _ := url.Parse(up.srv.URL)
	e := newGateEnv(t, u, 5*time.Second)
	tk := e.admittedPass()
	variants := passVariants(t, e, tk.Pass)
	tokens := make([]string, 0, len(variants))
	for _, v := range variants {
		tokens = append(tokens, v)
	}
	rng := rand.New(rand.NewPCG(39, 1))
	const n = 600
	let := 0
	for i := range n {
		h := genHeaderCase(rng, tk.Pass, tokens)
		admitted, code := h.expect(tk.Pass)
		before := up.count()
		r := sendWith(t, e, "GET", "/order", h.header(e))
		if !admitted {
			if r.status != http.StatusUnauthorized || errorCode(r.body) != code || up.count() != before {
				t.Fatalf("case %d (%s): %d %s, want 401 %s and nothing upstream", i, h, r.status, r.body, code)
			}
		} else {
			let++
			got := up.last(t)
			if r.status != 200 || up.count() != before+1 {
				t.Fatalf("case %d (%s): %d %s, want 200", i, h, r.status, r.body)
			}
			if p := got.Header.Values(gate.HeaderPass); len(p) != 1 || p[0] != tk.Pass || got.Header.Get(gate.HeaderSub) != tk.UserID {
				t.Fatalf("case %d (%s): the upstream got pass %q, sub %q", i, h, p, got.Header.Get(gate.HeaderSub))
			}
			if reqcheck.HasBearer(got.Header) {
				t.Fatalf("case %d (%s): a bearer reached the upstream: %q", i, h, got.Header.Values("Authorization"))
			}
			if len(h.bearers) == 0 && len(h.auth) == 1 && got.Header.Get("Authorization") != h.auth[0] {
				t.Fatalf("case %d (%s): the site's own Authorization became %q", i, h, got.Header.Get("Authorization"))
			}
		}
		// Forward auth judges the same request the same way.
		fh := h.header(e)
		fh.Set(gate.HeaderOriginalURI, "/order")
		fa := sendWith(t, e, "GET", "/gate/verify", fh)
		if want := map[bool]int{true: 204, false: 401}[admitted]; fa.status != want ||
			(admitted && fa.header.Get(gate.HeaderSub) != tk.UserID) || (!admitted && fa.header.Get(gate.HeaderSub) != "") {
			t.Fatalf("case %d (%s): /gate/verify %d (sub %q), want %d", i, h, fa.status, fa.header.Get(gate.HeaderSub), want)
		}
	}
	t.Logf("%d generated requests, %d let in", n, let)
	if let < n/10 || let > n*9/10 {
		t.Fatalf("the run proves little: %d of %d let in", let, n)
	}
}

// Each kind of pass that must never open the gate, in either header,
// through the proxy and forward auth: refused, nothing upstream.
func TestGateHeaderPassesRefused(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	u, _ := url.Parse(up.srv.URL)
	e := newGateEnv(t, u, 5*time.Second)
	tk := e.admittedPass()
	for name, tok := range passVariants(t, e, tk.Pass) {
		if name == "valid" {
			continue
		}
		for _, h := range []http.Header{
			{"Authorization": {"Bearer " + tok}, "Accept": {"application/json"}},
			{gate.HeaderPass: {tok}, "Accept": {"application/json"}},
		} {
			if r := sendWith(t, e, "GET", "/order", h); r.status != 401 || errorCode(r.body) != "pass_required" {
				t.Errorf("%s in %v: %d %s, want 401 pass_required", name, h, r.status, r.body)
			}
			h.Set(gate.HeaderOriginalURI, "/order")
			if r := sendWith(t, e, "GET", "/gate/verify", h); r.status != 401 {
				t.Errorf("%s in %v: /gate/verify %d, want 401", name, h, r.status)
			}
		}
	}
	if up.count() != 0 {
		t.Fatalf("%d refused requests reached the upstream", up.count())
	}
}

// A pass in a header is held to the sharing limit a cookie is: used from
// more networks than WAITROOM_PASS_MAX_CLIENTS allows, through the proxy
// or forward auth, it is cancelled (401 pass_used_elsewhere) in every
// header, and its cookie too.
func TestGateHeaderPassSharingLimit(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	u, _ := url.Parse(up.srv.URL)
	e := newGateEnv(t, u, 5*time.Second)
	tk := e.admittedPass()
	clients := clientaddr.New(t)
	let := 0
	for i := range 6 {
		h := http.Header{"Accept": {"application/json"}, "X-Forwarded-For": {clients.Addr(i + 1)}}
		path := "/order"
		if i%2 == 0 {
			h.Set("Authorization", "Bearer "+tk.Pass)
		} else {
			h.Set(gate.HeaderPass, tk.Pass)
			h.Set(gate.HeaderOriginalURI, "/order")
			path = "/gate/verify"
		}
		r := sendWith(t, e, "GET", path, h)
		switch {
		case r.status == 200 || r.status == 204:
			let++
		case r.status == 401 && (path == "/gate/verify" || errorCode(r.body) == "pass_used_elsewhere"):
		default:
			t.Fatalf("network %d: %d %s", i, r.status, r.body)
		}
	}
	if let != 3 {
		t.Fatalf("%d networks let in with one pass in headers, want 3", let)
	}
	for _, h := range []http.Header{
		{"Authorization": {"Bearer " + tk.Pass}},
		{gate.HeaderPass: {tk.Pass}},
		{"Cookie": {e.passCookieName() + "=" + tk.Pass}},
	} {
		h.Set("Accept", "application/json")
		h.Set("X-Forwarded-For", clients.Addr(1)) // a network it was let in from
		if r := sendWith(t, e, "GET", "/order", h); r.status != 401 || errorCode(r.body) != "pass_used_elsewhere" {
			t.Fatalf("%v after the limit: %d %s, want 401 pass_used_elsewhere", h, r.status, r.body)
		}
	}
}
