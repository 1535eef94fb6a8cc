package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/backoffice/adminsession"
	"github.com/waitroom/waitroom/internal/backoffice/apitoken"
	"github.com/waitroom/waitroom/internal/backoffice/lockout"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
	"github.com/waitroom/waitroom/internal/testkit/oidctest"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/web/adminapi"
)

// newToken makes an API token through the API, as the break-glass admin.
func (e *env) newToken(t *testing.T, body string) (adminapi.CreateTokenResponse, string) {
	t.Helper()
	r := e.do("POST", "/admin/v1/tokens", body, "Authorization", "Bearer "+adminToken, "Content-Type", "application/json")
	var tok adminapi.CreateTokenResponse
	if r.status != 201 || json.Unmarshal(r.body, &tok) != nil || !strings.HasPrefix(tok.Token, "wrt_") {
		t.Fatalf("create token %s: %d %s", body, r.status, r.body)
	}
	return tok, tok.Token
}

// TestRolesAndScopes: what each role may do, on the queues it covers.
func TestRolesAndScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, ClientIP: behindProxy(t)})
	as := func(tok string) []string { return asClient(testClient(t), tok) }
	withJSON := func(h []string) []string { return append(h, "Content-Type", "application/json") }
	q := "/admin/v1/queues/" + e.queue
	_, viewer := e.newToken(t, `{"name":"grafana","role":"viewer","expires_in_s":3600}`)
	_, opHere := e.newToken(t, `{"name":"ops-here","role":"operator","queues":["`+e.queue+`"],"expires_in_s":3600}`)
	_, admin := e.newToken(t, `{"name":"root-bot","role":"admin"}`)

	for _, c := range []struct {
		name   string
		token  string
		method string
		path   string
		body   string
		status int
		code   string
	}{
		{"viewer reads", viewer, "GET", q, "", 200, ""},
		{"viewer reads the audit", viewer, "GET", q + "/audit", "", 200, ""},
		{"viewer reads the history", viewer, "GET", q + "/history", "", 200, ""},
		{"viewer cannot change", viewer, "PATCH", q, `{"refill_size":3}`, 403, "forbidden_role"},
		{"viewer cannot remove", viewer, "DELETE", q + "/users/u1", "", 403, "forbidden_role"},
		{"viewer cannot make tokens", viewer, "POST", "/admin/v1/tokens", `{"name":"x","role":"admin"}`, 403, "forbidden_role"},
		{"operator changes its queue", opHere, "PATCH", q, `{"refill_size":3}`, 200, ""},
		{"operator pauses", opHere, "PATCH", q, `{"paused":true}`, 200, ""},
		{"operator cannot set a webhook", opHere, "PATCH", q, `{"webhook_url":"https://hooks.example/x"}`, 403, "forbidden_role"},
		{"operator cannot set a probe", opHere, "PATCH", q, `{"refill_size":4,"origin_probe_url":"https://shop.example/health"}`, 403, "forbidden_role"},
		{"operator cannot list tokens", opHere, "GET", "/admin/v1/tokens", "", 403, "forbidden_role"},
		{"operator cannot end sessions", opHere, "DELETE", "/admin/v1/sessions/kim@example.com", "", 403, "forbidden_role"},
		{"admin sets a webhook", admin, "PATCH", q, `{"webhook_url":"https://hooks.example/x"}`, 200, ""},
		{"admin lists tokens", admin, "GET", "/admin/v1/tokens", "", 200, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := as(c.token)
			if c.body != "" {
				h = withJSON(h)
			}
			r := e.do(c.method, c.path, c.body, h...)
			if c.code != "" {
				wantError(t, r, c.status, c.code)
			} else if r.status != c.status {
				t.Fatalf("%d %s", r.status, r.body)
			}
		})
	}

	// An operator of another queue (made directly: the API makes tokens
	// for this service's queues only).
	_, elsewhere, err := e.tokens.Create(context.Background(), apitoken.Request{Name: "ops-elsewhere",
		Grant: adminauth.Grant{Role: adminauth.Operator, Queues: []string{"elsewhere"}}})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, e.do("PATCH", q, `{"refill_size":3}`, withJSON(as(elsewhere))...), 403, "forbidden_queue")
	wantError(t, e.do("GET", q, "", as(elsewhere)...), 403, "forbidden_queue")
	if r := e.do("GET", "/admin/v1/queues", "", as(elsewhere)...); r.status != 200 || strings.Contains(string(r.body), e.queue) {
		t.Fatalf("another queue's operator sees %d %s", r.status, r.body)
	}

	// Each change names who made it.
	entries := e.auditEntries("")
	want := map[string]bool{"ops-here": false, "root-bot": false}
	for _, en := range entries {
		if en.Actor != nil && en.Actor.Kind == actor.KindToken {
			if _, ok := want[en.Actor.Name]; ok {
				want[en.Actor.Name] = true
			}
		}
	}
	if !want["ops-here"] || !want["root-bot"] {
		t.Fatalf("audit actors %v in %+v", want, entries)
	}
}

// TestTokenRequestsRefused: each bad request has its code, and makes no
// token.
func TestTokenRequestsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, ClientIP: behindProxy(t)})
	h := append(asClient(testClient(t), adminToken), "Content-Type", "application/json")
	for _, c := range []struct{ body, code string }{
		{`{"name":"x","role":"root"}`, "invalid_role"},
		{`{"name":"x"}`, "invalid_role"},
		{`{"name":"x","role":"viewer","expires_in_s":0}`, "invalid_expiry"},
		{`{"name":"x","role":"viewer","expires_in_s":-5}`, "invalid_expiry"},
		{`{"name":"x","role":"viewer","expires_in_s":30}`, "invalid_expiry"},
		{`{"name":"x","role":"viewer","expires_in_s":99999999999}`, "invalid_expiry"},
		{`{"name":"x","role":"viewer","queues":["nope"]}`, "invalid_queues"},
		{`{"name":"x","role":"admin","queues":["` + e.queue + `"]}`, "invalid_queues"},
		{`{"name":"","role":"viewer"}`, "invalid_name"},
		{`{"name":"a\nb","role":"viewer"}`, "invalid_name"},
		{`{"name":"x","role":"viewer","admin":true}`, "invalid_json"},
	} {
		wantError(t, e.do("POST", "/admin/v1/tokens", c.body, h...), 400, c.code)
	}
	r := e.do("GET", "/admin/v1/tokens", "", h...)
	if r.status != 200 || strings.Contains(string(r.body), `"name":"x"`) {
		t.Fatalf("a refused request made a token: %s", r.body)
	}
}

// TestTokenRevokedAndListedWithoutSecret: the list never shows a secret;
// a revoked token is refused at once on the replica that revoked it.
func TestTokenRevokedAndListedWithoutSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, ClientIP: behindProxy(t)})
	client := testClient(t)
	tok, secret := e.newToken(t, `{"name":"ci","role":"operator","expires_in_s":600}`)
	if r := e.do("GET", "/admin/v1/queues", "", asClient(client, secret)...); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	r := e.do("GET", "/admin/v1/tokens", "", asClient(client, adminToken)...)
	if r.status != 200 || strings.Contains(string(r.body), secret[len("wrt_")+17:]) || !strings.Contains(string(r.body), `"last_used_at":"`) {
		t.Fatalf("list: %s", r.body)
	}
	if r := e.do("DELETE", "/admin/v1/tokens/"+tok.ID, "", asClient(client, adminToken)...); r.status != 204 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	wantError(t, e.do("GET", "/admin/v1/queues", "", asClient(client, secret)...), 401, "unauthorized")
	wantError(t, e.do("DELETE", "/admin/v1/tokens/"+tok.ID, "", asClient(client, adminToken)...), 404, "token_not_found")
}

// TestWrongAPITokensAreLockedOut: guessing API tokens counts like
// guessing the admin token, and a locked address is refused everything.
func TestWrongAPITokensAreLockedOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, ClientIP: behindProxy(t)})
	_, good := e.newToken(t, `{"name":"ok","role":"viewer"}`)
	client := testClient(t)
	for i := 0; i < lockout.DefaultPolicy.MaxFailures; i++ {
		guess := good[:len(good)-4] + strings.Repeat("A", 4)
		if guess == good {
			guess = good[:len(good)-4] + "BBBB"
		}
		wantError(t, e.do("GET", "/admin/v1/queues", "", asClient(client, guess)...), 401, "unauthorized")
	}
	r := e.do("GET", "/admin/v1/queues", "", asClient(client, "wrt_aaaaaaaaaaaaaaaa_"+strings.Repeat("b", 43))...)
	wantError(t, r, 429, "too_many_attempts")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	// The break-glass token from the locked address: refused too, unjudged.
	wantError(t, e.do("GET", "/admin/v1/queues", "", asClient(client, adminToken)...), 429, "too_many_attempts")
	// A valid API token is 256 random bits, no guess: a script behind the
	// guesser's address keeps working.
	if r := e.do("GET", "/admin/v1/queues", "", asClient(client, good)...); r.status != 200 {
		t.Fatalf("a valid token from the locked address: %d %s", r.status, r.body)
	}
	// Another address is served.
	if r := e.do("GET", "/admin/v1/queues", "", asClient(testClient(t), good)...); r.status != 200 {
		t.Fatalf("another address: %d", r.status)
	}
}

// TestBreakGlassIsLoudButQuiet: each use of WAITROOM_ADMIN_TOKEN is
// named in the audit log; the WARN line comes at most once a minute.
func TestBreakGlassIsLoudButQuiet(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil))
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, ClientIP: behindProxy(t), Logger: log})
	client := testClient(t)
	for range 20 {
		if r := e.do("GET", "/admin/v1/queues", "", asClient(client, adminToken)...); r.status != 200 {
			t.Fatal(r.status)
		}
	}
	e.do("PUT", "/admin/v1/queues/"+e.queue+"/refill-size", `{"refill_size":7}`, append(asClient(client, adminToken), "Content-Type", "application/json")...)
	mu.Lock()
	n := strings.Count(logs.String(), "break-glass")
	leaked := strings.Contains(logs.String(), adminToken)
	mu.Unlock()
	if n != 1 || leaked {
		t.Fatalf("%d break-glass lines (want 1), token in the log: %v", n, leaked)
	}
	entries := e.auditEntries("")
	if len(entries) == 0 || entries[0].Actor == nil || *entries[0].Actor != (actor.Actor{Kind: actor.KindAdminToken, Name: actor.AdminTokenName}) {
		t.Fatalf("audit: %+v", entries)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestSessionCookie: a person's session cookie works like a token, for
// their grants only; signing out ends it; another site cannot sign them
// out; an admin ends all of a person's sessions.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	sessions, err := adminsession.New(rdb, adminsession.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, rdb, slow, testTimeout, Options{AdminToken: adminToken, ClientIP: behindProxy(t), Sessions: sessions})
	person := adminsession.Person{Name: "kim-" + e.queue + "@example.com", Subject: "s1", Grants: []adminauth.Grant{{Role: adminauth.Viewer}}}
	id, err := sessions.Start(context.Background(), person)
	if err != nil {
		t.Fatal(err)
	}
	client := testClient(t)
	cookie := []string{"X-Forwarded-For", client, "Cookie", adminapi.CookieName(false) + "=" + id} // the env's cookies are not Secure
	r := e.do("GET", "/admin/v1/me", "", cookie...)
	var me adminapi.MeResponse
	if r.status != 200 || json.Unmarshal(r.body, &me) != nil || me.Actor.Kind != actor.KindOIDC || me.Actor.Name != person.Name || me.Role != adminauth.Viewer || me.Admin || len(me.Operate) != 0 {
		t.Fatalf("me: %d %s", r.status, r.body)
	}
	wantError(t, e.do("PATCH", "/admin/v1/queues/"+e.queue, `{"paused":true}`, append(cookie, "Content-Type", "application/json")...), 403, "forbidden_role")
	wantError(t, e.do("POST", "/admin/logout", "", append(cookie, "Sec-Fetch-Site", "cross-site")...), 403, "cross_site_admin")
	if r := e.do("POST", "/admin/logout", "", cookie...); r.status != 204 || !strings.Contains(r.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("logout: %d %v", r.status, r.header)
	}
	r = e.do("GET", "/admin/v1/me", "", cookie...)
	wantError(t, r, 401, "unauthorized")
	if sc := r.header.Get("Set-Cookie"); !strings.Contains(sc, adminapi.CookieName(false)+"=;") || !strings.Contains(sc, "Max-Age=0") {
		t.Fatalf("an ended session's cookie is not cleared: %q", sc)
	}

	// Two sessions of one person, ended by an admin; the name escaped as
	// JavaScript's encodeURIComponent writes it.
	person.Name = "kim+ops-" + e.queue + "@example.com"
	a, _ := sessions.Start(context.Background(), person)
	b, _ := sessions.Start(context.Background(), person)
	r = e.do("DELETE", "/admin/v1/sessions/"+strings.NewReplacer("@", "%40", "+", "%2B").Replace(person.Name), "", asClient(client, adminToken)...)
	if r.status != 200 || !strings.Contains(string(r.body), `"ended":2`) {
		t.Fatalf("end sessions: %d %s", r.status, r.body)
	}
	for _, id := range []string{a, b} {
		wantError(t, e.do("GET", "/admin/v1/me", "", "X-Forwarded-For", client, "Cookie", adminapi.CookieName(false)+"="+id), 401, "unauthorized")
	}
}

// TestSignInFailuresLockOut: a failed sign-in that only a guesser can
// make (a code the provider refuses, a replayed state) counts like a wrong
// token; what any page can make a browser send to /admin/callback (no
// sign-in cookie, a state not its own, the provider's refusal) is
// answered but never counted, so another site cannot lock an operator out.
func TestSignInFailuresLockOut(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	p := oidctest.New(t, oidctest.Options{ClientID: "waitroom", ClientSecret: "s3cret", RedirectURIs: []string{"http://127.0.0.1:1/admin/callback"}})
	roles, _ := adminauth.ParseMapping("wr-admin=admin")
	signIn, err := adminsession.NewSignIn(rdb, []byte("signin-lockout-secret-0123456789ab"), adminsession.OIDC{Issuer: p.Issuer(),
		ClientID: "waitroom", ClientSecret: "s3cret", RedirectURL: "http://127.0.0.1:1/admin/callback", Roles: roles})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, rdb, slow, testTimeout, Options{AdminToken: adminToken, ClientIP: behindProxy(t), SignIn: signIn})
	client := testClient(t)
	page := func(r response, status int, code string) {
		t.Helper()
		if r.status != status || !strings.Contains(string(r.body), `data-code="`+code+`"`) {
			t.Fatalf("want %d %s: %d %s", status, code, r.status, r.body)
		}
	}
	// What another site's page can send: never counted.
	for range 3 * lockout.DefaultPolicy.MaxFailures {
		page(e.do("GET", "/admin/callback?state=guess&code=guess", "", "X-Forwarded-For", client, "Sec-Fetch-Site", "cross-site"), 400, "invalid_state")
		page(e.do("GET", "/admin/callback?error=access_denied&state=x", "", "X-Forwarded-For", client), 401, "signin_denied")
	}
	if r := e.do("GET", "/admin/v1/me", "", asClient(client, adminToken)...); r.status != 200 {
		t.Fatalf("the operator after another site's callbacks: %d %s", r.status, r.body)
	}
	// A real sign-in with a made-up code: counted, ten lock the address.
	for i := 0; i <= lockout.DefaultPolicy.MaxFailures; i++ {
		login := e.do("GET", "/admin/login", "", "X-Forwarded-For", client)
		to, _ := url.Parse(login.header.Get("Location"))
		cookie := strings.SplitN(login.header.Get("Set-Cookie"), ";", 2)[0]
		if login.status != 302 || to == nil || !strings.HasPrefix(cookie, "wr_signin=") {
			t.Fatalf("login: %d %v", login.status, login.header)
		}
		r := e.do("GET", "/admin/callback?state="+url.QueryEscape(to.Query().Get("state"))+"&code=made-up", "", "X-Forwarded-For", client, "Cookie", cookie)
		if i < lockout.DefaultPolicy.MaxFailures {
			page(r, 401, "invalid_code")
		} else {
			page(r, 429, "too_many_attempts")
			if r.header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		}
	}
	// Without a provider, no sign-in.
	plain := newEnv(t, rdb, slow, testTimeout, Options{AdminToken: adminToken})
	wantError(t, plain.do("GET", "/admin/login", ""), 404, "oidc_disabled")
}

// TestGeneratedCredentialsRefused: generated Authorization headers and
// session cookies (near misses of real ones, other schemes, odd bytes)
// are never let in and never answered with a server error: 401, or 429
// once an address has failed too often.
func TestGeneratedCredentialsRefused(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	sessions, _ := adminsession.New(rdb, adminsession.Options{})
	e := newEnv(t, rdb, slow, testTimeout, Options{AdminToken: adminToken, ClientIP: behindProxy(t), Sessions: sessions})
	_, good := e.newToken(t, `{"name":"real","role":"admin"}`)
	sess, _ := sessions.Start(context.Background(), adminsession.Person{Name: "gen@example.com", Grants: []adminauth.Grant{{Role: adminauth.Admin}}})
	r := mrand.New(mrand.NewPCG(7, 8))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=+/. \t;,\"'\\%\x7f\u00e9"
	mutate := func(s string) string {
		b := []rune(s)
		switch r.IntN(4) {
		case 0:
			b[r.IntN(len(b))] = rune(alphabet[r.IntN(len(alphabet))])
		case 1:
			b = b[:r.IntN(len(b))]
		case 2:
			b = append(b, rune(alphabet[r.IntN(len(alphabet))]))
		default:
			b = b[:0]
			for n := r.IntN(90); n > 0; n-- {
				b = append(b, rune(alphabet[r.IntN(len(alphabet))]))
			}
		}
		return string(b)
	}
	clients := []string{testClient(t), testClient(t), testClient(t)}
	for i := 0; i < 300; i++ {
		var h []string
		switch r.IntN(4) {
		case 0:
			h = []string{"Authorization", "Bearer " + mutate(good)}
		case 1:
			h = []string{"Authorization", "Bearer " + mutate(adminToken)}
		case 2:
			h = []string{"Authorization", mutate("Bearer " + good)}
		default:
			h = []string{"Cookie", adminapi.CookieName(false) + "=" + mutate(sess)}
		}
		// A variant that still says the real credential (trimmed space
		// around a header's value, the scheme's case) is no forgery.
		probe, _ := http.NewRequest("GET", "/", nil)
		probe.Header.Set(h[0], h[1])
		if tok, ok := reqcheck.BearerToken(probe); ok && (tok == good || tok == adminToken) {
			continue
		}
		if c, err := probe.Cookie(adminapi.CookieName(false)); err == nil && c.Value == sess {
			continue
		}
		// Headers Go cannot send are no test of the server.
		if strings.ContainsAny(h[1], "\r\n\x00\x7f") {
			continue
		}
		res := e.do("GET", "/admin/v1/me", "", append(h, "X-Forwarded-For", clients[r.IntN(len(clients))])...)
		if res.status != 401 && res.status != 429 {
			t.Fatalf("%q: %d %s", h, res.status, res.body)
		}
	}
	// The real ones still work, from a fresh address.
	if res := e.do("GET", "/admin/v1/me", "", asClient(testClient(t), good)...); res.status != 200 {
		t.Fatalf("the real token: %d", res.status)
	}
}
