package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

const testIssuer = "https://waitroom.test"

// newTrust returns place credentials and entry passes with a fresh secret
// and key, as a replica with no configured ones would have.
func newTrust(t testing.TB, _ *redis.Client) (*place.Credentials, *pass.Passes) {
	t.Helper()
	places, err := place.New([]byte(strings.Repeat("k", place.MinSecretBytes)))
	if err != nil {
		t.Fatal(err)
	}
	return places, newPasses(t)
}

func newPasses(t testing.TB) *pass.Passes {
	t.Helper()
	pemKey, err := pass.GenerateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pass.ParseKeys(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pass.New(keys, testIssuer)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// placeCookie returns the place cookie a response sets for queue q.
func placeCookie(t *testing.T, r response, q string) *http.Cookie {
	t.Helper()
	for _, line := range r.header.Values("Set-Cookie") {
		c, err := http.ParseSetCookie(line)
		if err == nil && (c.Name == place.CookieName(q, true) || c.Name == place.CookieName(q, false)) {
			return c
		}
	}
	t.Fatalf("no place cookie for %s in %v", q, r.header.Values("Set-Cookie"))
	return nil
}

func (e *env) enterAnon(header ...string) (publicapi.TicketResponse, response) {
	e.t.Helper()
	r := e.do("POST", "/api/v1/queues/"+e.queue+"/enter", "{}", header...)
	return decodeTicket(e.t, r), r
}

func (e *env) statusOf(header ...string) response {
	e.t.Helper()
	return e.do("GET", "/api/v1/queues/"+e.queue+"/status", "", header...)
}

func bearerHeader(token string) []string { return []string{"Authorization", "Bearer " + token} }

// A browser (cookie) or an app (bearer token) enters without naming an
// id, keeps its place across requests, re-enters to the back with the
// same member id, and leaves.
func TestPlaceCredential(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{CookieSecure: true})
	e.enterAnon()
	e.enterAnon() // the two tokens of the bucket

	a, ra := e.enterAnon()
	if a.Status != queue.Waiting || a.Position != 1 || a.PlaceToken == "" || !strings.HasPrefix(a.UserID, "a:") {
		t.Fatalf("a = %+v", a)
	}
	c := placeCookie(t, ra, e.queue)
	if c.Value != a.PlaceToken || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.MaxAge <= 0 {
		t.Fatalf("cookie %+v", c)
	}
	b, _ := e.enterAnon()
	if b.UserID == a.UserID || len(b.UserID) < 2+22 {
		t.Fatalf("member ids %q and %q: want distinct, 128 random bits", a.UserID, b.UserID)
	}

	viaCookie := decodeTicket(t, e.statusOf("Cookie", c.Name+"="+c.Value))
	viaBearer := decodeTicket(t, e.statusOf(bearerHeader(a.PlaceToken)...))
	viaLower := decodeTicket(t, e.statusOf("Authorization", "bEaReR "+a.PlaceToken))
	for _, st := range []publicapi.TicketResponse{viaCookie, viaBearer, viaLower} {
		if st.UserID != a.UserID || st.Status != queue.Waiting || st.Position != 1 || st.PlaceToken != "" {
			t.Fatalf("status = %+v, want a at 1", st)
		}
	}

	// Re-entering with the credential keeps the member and goes to the back.
	again, _ := e.enterAnon(bearerHeader(a.PlaceToken)...)
	if again.UserID != a.UserID || again.Position != 2 || again.Waiting != 2 {
		t.Fatalf("re-enter = %+v", again)
	}

	r := e.do("DELETE", "/api/v1/queues/"+e.queue+"/place", "", "Cookie", c.Name+"="+c.Value)
	if r.status != http.StatusNoContent {
		t.Fatalf("leave: %d %s", r.status, r.body)
	}
	if gone := placeCookie(t, r, e.queue); gone.MaxAge >= 0 {
		t.Fatalf("leave kept the cookie: %+v", gone)
	}
	if st := decodeTicket(t, e.statusOf(bearerHeader(a.PlaceToken)...)); st.Status != queue.NotWaiting {
		t.Fatalf("after leave: %+v", st)
	}
	if st := decodeTicket(t, e.statusOf(bearerHeader(b.PlaceToken)...)); st.Position != 1 {
		t.Fatalf("b after a left: %+v", st)
	}
}

// A third party who knows, or guesses, a member id, or holds a credential
// of its own, can neither see, move nor remove someone else's place. Each
// attempt fails with the documented code, and the line is unchanged.
func TestThirdPartyCannotTouchAPlace(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	e := newEnv(t, rdb, slow, testTimeout, Options{AdminToken: adminToken})
	other := newEnv(t, rdb, slow, testTimeout, Options{Places: e.srvPlaces(t), Passes: newPasses(t)})
	e.enterAnon()
	e.enterAnon()
	victim, _ := e.enterAnon()
	attacker, _ := e.enterAnon()
	behind, _ := e.enterAnon()
	elsewhere, _ := other.enterAnon() // a real credential, for another queue

	forgedSecret, err := place.New([]byte(strings.Repeat("x", place.MinSecretBytes)))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(attacker.PlaceToken, ".")
	victimMember := base64.RawURLEncoding.EncodeToString([]byte(victim.UserID))
	swapped := strings.Join([]string{parts[0], parts[1], victimMember, parts[3], parts[4]}, ".")
	tamperedMAC := flipChar(attacker.PlaceToken, len(attacker.PlaceToken)-20)
	otherQueue := strings.Replace(elsewhere.PlaceToken, "."+other.queue+".", "."+e.queue+".", 1)
	base := "/api/v1/queues/" + e.queue
	cookie := e.placeCookieName() + "="

	for _, tc := range []struct {
		name, method, path, body string
		header                   []string
		status                   int
		code                     string
	}{
		{"status by id", "GET", base + "/status?user_id=" + victim.UserID, "", nil, 400, "user_ids_disabled"},
		{"leave by id", "DELETE", base + "/users/" + victim.UserID, "", nil, 400, "user_ids_disabled"},
		{"enter by id", "POST", base + "/enter", `{"user_id":"` + victim.UserID + `"}`, nil, 400, "user_ids_disabled"},
		{"status, no credential", "GET", base + "/status", "", nil, 401, "invalid_place"},
		{"leave, no credential", "DELETE", base + "/place", "", nil, 401, "invalid_place"},
		{"status, member swapped", "GET", base + "/status", "", bearerHeader(swapped), 401, "invalid_place"},
		{"leave, member swapped", "DELETE", base + "/place", "", []string{"Cookie", cookie + swapped}, 401, "invalid_place"},
		{"re-enter, member swapped", "POST", base + "/enter", "{}", bearerHeader(swapped), 401, "invalid_place"},
		{"status, tampered signature", "GET", base + "/status", "", bearerHeader(tamperedMAC), 401, "invalid_place"},
		{"leave, tampered signature", "DELETE", base + "/place", "", bearerHeader(tamperedMAC), 401, "invalid_place"},
		{"status, another secret", "GET", base + "/status", "", bearerHeader(forgedSecret.Issue(e.queue, victim.UserID, 0)), 401, "invalid_place"},
		{"leave, another secret", "DELETE", base + "/place", "", bearerHeader(forgedSecret.Issue(e.queue, victim.UserID, 0)), 401, "invalid_place"},
		{"status, other queue's credential", "GET", base + "/status", "", bearerHeader(elsewhere.PlaceToken), 401, "invalid_place"},
		{"leave, other queue's cookie", "DELETE", base + "/place", "", []string{"Cookie", cookie + elsewhere.PlaceToken}, 401, "invalid_place"},
		{"status, other queue's credential renamed", "GET", base + "/status", "", bearerHeader(otherQueue), 401, "invalid_place"},
		{"status, garbage", "GET", base + "/status", "", bearerHeader("v1." + e.queue + ".%%%.###"), 401, "invalid_place"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.body, tc.header...)
			wantError(t, r, tc.status, tc.code)
			if tc.status == 401 && !strings.Contains(r.header.Get("WWW-Authenticate"), "invalid_token") {
				t.Errorf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
			}
		})
	}
	for _, want := range []struct {
		tk  publicapi.TicketResponse
		pos int64
	}{{victim, 1}, {attacker, 2}, {behind, 3}} {
		st := decodeTicket(t, e.statusOf(bearerHeader(want.tk.PlaceToken)...))
		if st.UserID != want.tk.UserID || st.Status != queue.Waiting || st.Position != want.pos || st.Waiting != 3 {
			t.Fatalf("after the attacks %s is %+v, want WAITING at %d of 3", want.tk.UserID, st, want.pos)
		}
	}
	// The operator, and only the operator, can still remove the victim.
	if r := e.do("DELETE", "/admin/v1/queues/"+e.queue+"/users/"+victim.UserID, "", "Authorization", "Bearer "+adminToken); r.status != 204 {
		t.Fatalf("admin removal: %d %s", r.status, r.body)
	}
	if st := decodeTicket(t, e.statusOf(bearerHeader(victim.PlaceToken)...)); st.Status != queue.NotWaiting {
		t.Fatalf("victim after removal: %+v", st)
	}
}

// flipChar changes the character of s at i to another base64url one.
func flipChar(s string, i int) string {
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}

// srvPlaces returns the credentials e's server signs with.
func (e *env) srvPlaces(t *testing.T) *place.Credentials {
	t.Helper()
	return e.places
}

const joinSecret = "join-secret-of-the-shop-0123456789abcdef"

// newJoin verifies join tokens signed with joinSecret.
func newJoin(t *testing.T) *place.Join {
	t.Helper()
	join, err := place.NewJoin([]byte(joinSecret))
	if err != nil {
		t.Fatal(err)
	}
	return join
}

func mintJoin(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A site's signed-in user holds one place on every device: a second
// device joining with the same account's join token gets the same place,
// not a new one at the back. Bad join tokens are refused.
func TestJoinToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{Join: newJoin(t)})
	e.enterAnon()
	e.enterAnon()
	e.enterAnon()                     // one waits ahead
	ghost, ghostResp := e.enterAnon() // this browser waits anonymously, then its user signs in
	exp := time.Now().Add(time.Hour).Unix()
	// Minted as the README's Go example does (aud as an array there).
	claims := jwt.RegisteredClaims{Subject: "alice", Audience: jwt.ClaimStrings{e.queue},
		ExpiresAt: jwt.NewNumericDate(time.Now().Add(5 * time.Minute))}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(joinSecret))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"join_token":"` + token + `"}`
	c := placeCookie(t, ghostResp, e.queue)
	first := decodeTicket(t, e.do("POST", "/api/v1/queues/"+e.queue+"/enter", body, "Cookie", c.Name+"="+c.Value))
	if first.UserID != "u:alice" || first.Status != queue.Waiting || first.Position != 2 || first.PlaceToken == "" {
		t.Fatalf("first device: %+v", first)
	}
	if st := decodeTicket(t, e.statusOf(bearerHeader(ghost.PlaceToken)...)); st.Status != queue.NotWaiting {
		t.Fatalf("the anonymous place the browser held before joining: %+v", st)
	}
	e.enterAnon() // someone joins behind alice
	second := decodeTicket(t, e.do("POST", "/api/v1/queues/"+e.queue+"/enter", body))
	if second.UserID != "u:alice" || second.Position != 2 || second.Waiting != 3 {
		t.Fatalf("second device: %+v, want alice still at 2 of 3", second)
	}

	enter := "/api/v1/queues/" + e.queue + "/enter"
	other := []byte("another-secret-0123456789abcdefghijklmnop")
	for name, tok := range map[string]string{
		"wrong secret":   mintJoin(t, jwt.SigningMethodHS256, other, jwt.MapClaims{"sub": "mallory", "aud": e.queue, "exp": exp}),
		"expired":        mintJoin(t, jwt.SigningMethodHS256, []byte(joinSecret), jwt.MapClaims{"sub": "mallory", "aud": e.queue, "exp": time.Now().Add(-time.Minute).Unix()}),
		"no exp":         mintJoin(t, jwt.SigningMethodHS256, []byte(joinSecret), jwt.MapClaims{"sub": "mallory", "aud": e.queue}),
		"other queue":    mintJoin(t, jwt.SigningMethodHS256, []byte(joinSecret), jwt.MapClaims{"sub": "mallory", "aud": "other", "exp": exp}),
		"no sub":         mintJoin(t, jwt.SigningMethodHS256, []byte(joinSecret), jwt.MapClaims{"aud": e.queue, "exp": exp}),
		"control in sub": mintJoin(t, jwt.SigningMethodHS256, []byte(joinSecret), jwt.MapClaims{"sub": "a\nb", "aud": e.queue, "exp": exp}),
		"HS512":          mintJoin(t, jwt.SigningMethodHS512, []byte(joinSecret), jwt.MapClaims{"sub": "mallory", "aud": e.queue, "exp": exp}),
		"alg none":       mintJoin(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"sub": "mallory", "aud": e.queue, "exp": exp}),
		"future iat":     mintJoin(t, jwt.SigningMethodHS256, []byte(joinSecret), jwt.MapClaims{"sub": "mallory", "aud": e.queue, "exp": exp, "iat": time.Now().Add(time.Hour).Unix()}),
		"exp over a day": mintJoin(t, jwt.SigningMethodHS256, []byte(joinSecret), jwt.MapClaims{"sub": "mallory", "aud": e.queue, "exp": time.Now().Add(25 * time.Hour).Unix()}),
		"garbage":        "not-a-jwt",
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, e.do("POST", enter, `{"join_token":"`+tok+`"}`), 400, "invalid_join_token")
		})
	}
	if info := e.info(); info.Waiting != 3 {
		t.Fatalf("line of %d after the bad join tokens, want 3", info.Waiting)
	}
}

func (e *env) info() publicapi.QueueInfoResponse {
	e.t.Helper()
	var info publicapi.QueueInfoResponse
	if err := json.Unmarshal(e.do("GET", "/api/v1/queues/"+e.queue, "").body, &info); err != nil {
		e.t.Fatal(err)
	}
	return info
}

func (e *env) verify(token string) response {
	e.t.Helper()
	return e.do("GET", "/api/v1/verify?queue="+e.queue, "", bearerHeader(token)...)
}

// An admitted user's entry pass opens /api/v1/verify until its admission
// ends, for any reason; forged, edited, foreign, expired and early passes
// never do.
func TestEntryPass(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	short := queue.Settings{RefillSize: 3, RefillInterval: time.Hour, SessionTTL: 1500 * time.Millisecond}
	e := newEnv(t, rdb, short, testTimeout, Options{AdminToken: adminToken, TargetURL: "https://shop.example/order"})
	srv := e

	admitted := func() publicapi.TicketResponse {
		t.Helper()
		tk, _ := e.enterAnon()
		if tk.Status != queue.Entered || tk.Pass == "" {
			t.Fatalf("not admitted with a pass: %+v", tk)
		}
		return tk
	}
	a := admitted()
	if a.TargetURL != "https://shop.example/order?wr_pass="+a.Pass || strings.Contains(a.TargetURL, a.UserID) {
		t.Fatalf("target url %q", a.TargetURL)
	}
	r := e.verify(a.Pass)
	var v publicapi.VerifyResponse
	if err := json.Unmarshal(r.body, &v); err != nil || r.status != 200 {
		t.Fatalf("verify: %d %s", r.status, r.body)
	}
	c, err := srv.passes.Verify(a.Pass)
	if err != nil {
		t.Fatal(err)
	}
	if v.Queue != e.queue || v.Sub != a.UserID || v.Expires != c.Expires.Unix() {
		t.Fatalf("verify said %+v; pass %+v", v, c)
	}
	// The audience: a page must name its queue, and another's pass fails.
	wantError(t, e.do("GET", "/api/v1/verify?queue=another-event", "", bearerHeader(a.Pass)...), 401, "invalid_pass")
	wantError(t, e.do("GET", "/api/v1/verify", "", bearerHeader(a.Pass)...), 400, "queue_required")
	if ttl := c.Expires.Sub(c.AdmittedAt); ttl < 500*time.Millisecond || ttl > short.SessionTTL {
		t.Fatalf("exp - admission = %s, want the session TTL to the second", ttl)
	}
	// The status of an admitted user carries a pass for the same admission.
	st := decodeTicket(t, e.statusOf(bearerHeader(a.PlaceToken)...))
	if sc, err := srv.passes.Verify(st.Pass); err != nil || !sc.AdmittedAt.Equal(c.AdmittedAt) || sc.ID == c.ID {
		t.Fatalf("status pass %+v (%v), enter pass %+v: want the same admission, a new jti", sc, err, c)
	}

	// Forgeries, each checked against the verify endpoint.
	head, payload, sig := splitJWT(t, a.Pass)
	edit := func(field string, value any) string {
		var m map[string]any
		raw, _ := base64.RawURLEncoding.DecodeString(payload)
		_ = json.Unmarshal(raw, &m)
		m[field] = value
		out, _ := json.Marshal(m)
		return head + "." + base64.RawURLEncoding.EncodeToString(out) + "." + sig
	}
	otherKey := newPasses(t)
	foreign, _ := otherKey.Issue(e.queue, a.UserID, c.AdmittedAt, c.Expires)
	noneTok := mintJoin(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType,
		jwt.MapClaims{"iss": testIssuer, "sub": a.UserID, "aud": e.queue, "exp": c.Expires.Unix(), "nbf": c.NotBefore.Unix(), "adm": c.AdmittedAt.UnixMilli()})
	expired, _ := srv.passes.Issue(e.queue, a.UserID, c.AdmittedAt, time.Now().Add(-time.Minute))
	early, _ := srv.passes.Issue(e.queue, a.UserID, time.Now().Add(time.Hour), time.Now().Add(2*time.Hour))
	unknownQueue, _ := srv.passes.Issue("not-a-queue", a.UserID, c.AdmittedAt, c.Expires)
	otherAdmission, _ := srv.passes.Issue(e.queue, a.UserID, c.AdmittedAt.Add(-time.Second), c.Expires)
	unknownKid := strings.Replace(a.Pass, head, base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"EdDSA","kid":"nope","typ":"JWT"}`)), 1)
	for name, tok := range map[string]string{
		"sub edited":                edit("sub", "a:someone-else"),
		"exp edited":                edit("exp", time.Now().Add(time.Hour).Unix()),
		"aud edited":                edit("aud", "other"),
		"signed by another key":     foreign,
		"alg none":                  noneTok,
		"expired":                   expired,
		"not yet valid":             early,
		"for a queue not served":    unknownQueue,
		"for an earlier admission":  otherAdmission,
		"unknown kid":               unknownKid,
		"place token instead":       a.PlaceToken,
		"empty":                     "",
		"signature of another pass": head + "." + payload + "." + strings.Split(foreign, ".")[2],
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, e.verify(tok), 401, "invalid_pass")
		})
	}
	wantError(t, e.do("GET", "/api/v1/verify?queue="+e.queue, ""), 401, "invalid_pass")

	// Revocation: each way an admission ends closes its pass.
	left := admitted()
	if r := e.do("DELETE", "/api/v1/queues/"+e.queue+"/place", "", bearerHeader(left.PlaceToken)...); r.status != 204 {
		t.Fatal(r.status)
	}
	wantError(t, e.verify(left.Pass), 401, "invalid_pass")

	removed := admitted()
	if r := e.do("DELETE", "/admin/v1/queues/"+e.queue+"/users/"+removed.UserID, "", "Authorization", "Bearer "+adminToken); r.status != 204 {
		t.Fatal(r.status)
	}
	wantError(t, e.verify(removed.Pass), 401, "invalid_pass")

	// Re-entering: the tokens are spent, so a goes to the line; its old
	// pass closes. (Were it admitted again, the new admission's start
	// differs from the old pass's, which "for an earlier admission" covers.)
	reentered, _ := e.enterAnon(bearerHeader(a.PlaceToken)...)
	if reentered.UserID != a.UserID || reentered.Status != queue.Waiting {
		t.Fatalf("re-entry: %+v", reentered)
	}
	wantError(t, e.verify(a.Pass), 401, "invalid_pass")

	// Expiry: a pass of an admission past the session TTL closes, even
	// before the tick purges it and before its exp with the leeway.
	wait.For(t, 10*time.Second, "the expired admission's pass to be refused", func() (bool, string) { return e.verify(st.Pass).status == 401, "" })
	wantError(t, e.verify(st.Pass), 401, "invalid_pass")
}

func splitJWT(t *testing.T, tok string) (head, payload, sig string) {
	t.Helper()
	p := strings.Split(tok, ".")
	if len(p) != 3 {
		t.Fatalf("not a JWS: %q", tok)
	}
	return p[0], p[1], p[2]
}

// The JWKS is public, cacheable, and names the signing key by its kid.
func TestJWKS(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{})
	r := e.do("GET", "/.well-known/jwks.json", "")
	if r.status != 200 || !strings.Contains(r.header.Get("Cache-Control"), "max-age=") || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("jwks: %d %v", r.status, r.header)
	}
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(r.body, &set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("jwks body %s (%v)", r.body, err)
	}
	k := set.Keys[0]
	if k["kty"] != "OKP" || k["crv"] != "Ed25519" || k["alg"] != "EdDSA" || k["kid"] != e.passes.Keys().SigningKID() || k["d"] != "" {
		t.Fatalf("jwk %v", k)
	}
}
