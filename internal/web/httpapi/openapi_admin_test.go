package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/backoffice/adminsession"
	"github.com/waitroom/waitroom/internal/backoffice/apitoken"
	"github.com/waitroom/waitroom/internal/backoffice/lockout"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/oidctest"
	"github.com/waitroom/waitroom/internal/web/adminapi"
)

// The contract test's calls of the admin API's roles, API tokens and
// sign-in (TestOpenAPIContract runs them): every call through k.check,
// so each is validated against api/openapi.yaml.

// meJSON is GET /admin/v1/me as the test reads it.
type meJSON struct {
	Actor   actor.Actor `json:"actor"`
	Role    string      `json:"role"`
	Queues  []string    `json:"queues"`
	Operate []string    `json:"operate"`
	Admin   bool        `json:"admin"`
}

// auditJSON is a queue's audit log as the test reads it.
type auditJSON struct {
	Entries []struct {
		Action string       `json:"action"`
		Actor  *actor.Actor `json:"actor"`
	} `json:"entries"`
}

// tokenJSON is a token of GET /admin/v1/tokens as the test reads it.
type tokenJSON struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// decodeJSON reads r's body into a new T, or fails the test.
func decodeJSON[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	return v
}

// checkRoles: API tokens are made, listed and revoked by an admin; a
// viewer reads and may not change; an operator changes the queue it
// covers only, and never an admin's setting; every change names its
// actor in the audit log.
func (k *contract) checkRoles(t *testing.T, rdb *redis.Client) {
	ro := k.serve(t, rdb, slow, 2, func(string) Options { return Options{AdminToken: adminToken} })
	q := ro.queue
	other := ro.store.Queues()[1]
	auth := bearerHeader(adminToken)
	withJSON := func(h ...string) []string { return append([]string{"Content-Type", "application/json"}, h...) }

	me := decodeJSON[meJSON](t, k.check(t, ro, call{method: "GET", path: "/admin/v1/me", header: auth, status: 200}))
	if me.Actor != (actor.Actor{Kind: actor.KindAdminToken, Name: actor.AdminTokenName}) || me.Role != "admin" || !me.Admin || len(me.Operate) != 2 {
		t.Fatalf("me, with the admin token: %+v", me)
	}

	create := func(body string) adminapi.CreateTokenResponse {
		t.Helper()
		return decodeJSON[adminapi.CreateTokenResponse](t, k.check(t, ro, call{method: "POST", path: "/admin/v1/tokens", body: body, header: withJSON(auth...), status: 201}))
	}
	viewer := create(`{"name":"dashboard","role":"viewer"}`)
	operator := create(`{"name":"ops ` + other + `","role":"operator","queues":["` + other + `"],"expires_in_s":3600}`)
	unused := create(`{"name":"unused","role":"admin","queues":[]}`)
	if !strings.HasPrefix(viewer.Token, apitoken.Prefix+viewer.ID+"_") || viewer.Role != adminauth.Viewer || len(viewer.Queues) != 0 {
		t.Fatalf("viewer token: %+v", viewer)
	}
	if d := time.Until(operator.ExpiresAt); !slices.Equal(operator.Queues, []string{other}) || d < 59*time.Minute || d > time.Hour+time.Minute {
		t.Fatalf("operator token: %+v", operator)
	}
	for _, bad := range []call{
		{body: `{"name":"x","role":"superuser"}`, code: "invalid_role", docRejects: true},
		{body: `{"name":"x","role":"viewer","expires_in_s":0}`, code: "invalid_expiry", docRejects: true},
		{body: `{"name":"x","role":"viewer","expires_in_s":59}`, code: "invalid_expiry", docRejects: true},
		{body: `{"name":"x","role":"viewer","expires_in_s":31622401}`, code: "invalid_expiry", docRejects: true},
		{body: `{"name":"x","role":"viewer","queues":["nope"]}`, code: "invalid_queues"},
		{body: `{"name":"x","role":"admin","queues":["` + q + `"]}`, code: "invalid_queues"},
		{body: `{"name":"","role":"viewer"}`, code: "invalid_name", docRejects: true},
		{body: `{"name":"a\u0007b","role":"viewer"}`, code: "invalid_name"},
		{body: `{"name":"x","role":"viewer","admin":true}`, code: "invalid_json", docRejects: true},
		{body: `{"name":"x","role":"viewer","pad":"` + strings.Repeat("x", 5000) + `"}`, status: 413, code: "body_too_large", docRejects: true},
	} {
		bad.method, bad.path, bad.header = "POST", "/admin/v1/tokens", withJSON(auth...)
		if bad.status == 0 {
			bad.status = 400
		}
		k.check(t, ro, bad)
	}

	// A viewer reads, and may not change a queue nor manage tokens.
	vh := bearerHeader(viewer.Token)
	k.check(t, ro, call{method: "GET", path: "/admin/v1/queues/" + q, header: vh, status: 200})
	k.check(t, ro, call{method: "GET", path: "/admin/v1/queues", header: vh, status: 200})
	me = decodeJSON[meJSON](t, k.check(t, ro, call{method: "GET", path: "/admin/v1/me", header: vh, status: 200}))
	if me.Actor != (actor.Actor{Kind: actor.KindToken, Name: "dashboard"}) || me.Role != "viewer" || me.Admin || len(me.Queues) != 2 || len(me.Operate) != 0 {
		t.Fatalf("me, with a viewer's token: %+v", me)
	}
	k.check(t, ro, call{method: "PATCH", path: "/admin/v1/queues/" + q, body: `{"paused":false}`, header: withJSON(vh...), status: 403, code: "forbidden_role"})
	k.check(t, ro, call{method: "GET", path: "/admin/v1/tokens", header: vh, status: 403, code: "forbidden_role"})

	// An operator changes the queue it covers, not another, and no
	// admin's setting.
	oh := bearerHeader(operator.Token)
	me = decodeJSON[meJSON](t, k.check(t, ro, call{method: "GET", path: "/admin/v1/me", header: oh, status: 200}))
	if me.Role != "operator" || !slices.Equal(me.Queues, []string{other}) || !slices.Equal(me.Operate, []string{other}) {
		t.Fatalf("me, with an operator's token of %s: %+v", other, me)
	}
	k.check(t, ro, call{method: "PATCH", path: "/admin/v1/queues/" + q, body: `{"paused":false}`, header: withJSON(oh...), status: 403, code: "forbidden_queue"})
	k.check(t, ro, call{method: "GET", path: "/admin/v1/queues/" + q, header: oh, status: 403, code: "forbidden_queue"})
	k.check(t, ro, call{method: "PATCH", path: "/admin/v1/queues/" + other, body: `{"paused":false}`, header: withJSON(oh...), status: 200})
	k.check(t, ro, call{method: "PATCH", path: "/admin/v1/queues/" + other, body: `{"webhook_url":null}`, header: withJSON(oh...), status: 403, code: "forbidden_role"})
	k.check(t, ro, call{method: "DELETE", path: "/admin/v1/sessions/kim@example.com", header: oh, status: 403, code: "forbidden_role"})
	log := decodeJSON[auditJSON](t, k.check(t, ro, call{method: "GET", path: "/admin/v1/queues/" + other + "/audit", header: oh, status: 200}))
	if len(log.Entries) != 1 || log.Entries[0].Actor == nil || *log.Entries[0].Actor != (actor.Actor{Kind: actor.KindToken, Name: "ops " + other}) {
		t.Fatalf("the operator's change is not audited with its token's name: %+v", log.Entries)
	}

	// The list shows the tokens, never a secret; a token used has a last
	// use.
	r := k.check(t, ro, call{method: "GET", path: "/admin/v1/tokens", header: auth, status: 200})
	for _, secret := range []string{viewer.Token, operator.Token, unused.Token} {
		_, s, _ := strings.Cut(strings.TrimPrefix(secret, apitoken.Prefix), "_")
		if strings.Contains(string(r.body), s) {
			t.Fatal("the token list shows a secret")
		}
	}
	listed := map[string]tokenJSON{}
	for _, tok := range decodeJSON[struct{ Tokens []tokenJSON }](t, r).Tokens {
		listed[tok.ID] = tok
	}
	if v, u := listed[viewer.ID], listed[unused.ID]; v.Name != "dashboard" || v.LastUsedAt == nil || u.Name != "unused" || u.LastUsedAt != nil {
		t.Fatalf("listed: viewer %+v, unused %+v", v, u)
	}

	// Revoked: refused at once here.
	for _, tok := range []adminapi.CreateTokenResponse{viewer, operator, unused} {
		k.check(t, ro, call{method: "DELETE", path: "/admin/v1/tokens/" + tok.ID, header: auth, status: 204})
	}
	k.check(t, ro, call{method: "DELETE", path: "/admin/v1/tokens/" + viewer.ID, header: auth, status: 404, code: "token_not_found"})
	k.check(t, ro, call{method: "GET", path: "/admin/v1/queues/" + q, header: vh, status: 401, code: "unauthorized"})

	// Ending the sessions of a person with none: said so, not "ended 0".
	k.check(t, ro, call{method: "DELETE", path: "/admin/v1/sessions/nobody@example.com", header: auth, status: 404, code: "person_not_found"})
	k.check(t, ro, call{method: "DELETE", path: "/admin/v1/sessions/" + strings.Repeat("p", 257), header: auth, status: 400, code: "invalid_person", docRejects: true})
}

// checkTooManyTokens: the 1001st live token is refused. Tokens are the
// service's, not a queue's, so they fill a database of their own, where
// no other test makes any.
func (k *contract) checkTooManyTokens(t *testing.T, rdb *redis.Client) {
	opt := *rdb.Options()
	opt.DB = 7
	own := redis.NewClient(&opt)
	tokenKeys := []string{rediskeys.APITokens, rediskeys.APITokenExpiry, rediskeys.APITokenUsed}
	t.Cleanup(func() {
		own.Del(context.Background(), tokenKeys...)
		own.Close()
	})
	full := k.newEnv(t, own, slow, Options{AdminToken: adminToken})
	tokens := full.tokens
	for i := 0; ; i++ {
		_, _, err := tokens.Create(t.Context(), apitoken.Request{Name: "filler", Grant: adminauth.Grant{Role: adminauth.Viewer}, ExpiresIn: time.Minute})
		if errors.Is(err, apitoken.ErrTooMany) {
			break
		}
		if err != nil || i > apitoken.MaxTokens {
			t.Fatalf("token %d: %v", i, err)
		}
	}
	k.check(t, full, call{method: "POST", path: "/admin/v1/tokens", body: `{"name":"one more","role":"viewer"}`,
		header: []string{"Content-Type", "application/json", "Authorization", "Bearer " + adminToken}, status: 409, code: "too_many_tokens"})
}

// The back office's OpenID client, as the provider knows it.
const (
	oidcClientID     = "waitroom-backoffice"
	oidcClientSecret = "oidc-client-secret-of-the-contract-test"
	signInSecret     = "contract-test-secret-0123456789abcdef"
)

// The people of the provider: kim is an admin, vic a viewer, and sam's
// groups map to no role. Kim's address is this run's own: her sessions
// are counted when an admin ends them all, and a Redis kept between runs
// (REDIS_ADDR) still holds an earlier run's.
var (
	kim = oidctest.User{Subject: "kim", Email: fmt.Sprintf("kim-%d@example.com", time.Now().UnixNano()), Name: "Kim", Groups: []string{"wr-admin"}, EmailVerified: true}
	vic = oidctest.User{Subject: "vic", Email: "vic@example.com", Name: "Vic", Groups: []string{"wr-view", "staff"}, EmailVerified: true}
	sam = oidctest.User{Subject: "sam", Email: "sam@example.com", Name: "Sam", Groups: []string{"sales"}, EmailVerified: true}
)

// signInEnv is an env whose people sign in through a real OpenID
// provider running in the test, which knows kim, vic and sam; issuer,
// when not "", replaces the provider's (one where nothing listens).
func (k *contract) signInEnv(t *testing.T, rdb *redis.Client, issuer string) (*env, *oidctest.Provider) {
	t.Helper()
	var op *oidctest.Provider
	e := k.serve(t, rdb, slow, 1, func(base string) Options {
		op = oidctest.New(t, oidctest.Options{ClientID: oidcClientID, ClientSecret: oidcClientSecret, RedirectURIs: []string{base + "/admin/callback"}})
		if issuer == "" {
			issuer = op.Issuer()
		}
		roles, err := adminauth.ParseMapping("wr-admin=admin,wr-view=viewer")
		if err != nil {
			t.Fatal(err)
		}
		si, err := adminsession.NewSignIn(rdb, []byte(signInSecret), adminsession.OIDC{Issuer: issuer, ClientID: oidcClientID,
			ClientSecret: oidcClientSecret, RedirectURL: base + "/admin/callback", Roles: roles})
		if err != nil {
			t.Fatal(err)
		}
		return Options{SignIn: si, CookieSecure: true}
	})
	for _, u := range []oidctest.User{kim, vic, sam} {
		op.AddUser(u)
	}
	return e, op
}

// cookiesOf are the cookies r sets, by name.
func cookiesOf(r response) map[string]*http.Cookie {
	out := map[string]*http.Cookie{}
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		out[c.Name] = c
	}
	return out
}

// beginSignIn signs subject in at e's provider: GET /admin/login, then
// the provider's authorize endpoint, which sends the browser back. It
// returns the callback (path and query) and the browser's sign-in cookie
// header.
func (k *contract) beginSignIn(t *testing.T, e *env, op *oidctest.Provider, subject string) (callback string, cookie []string) {
	t.Helper()
	r := k.check(t, e, call{method: "GET", path: "/admin/login", status: 302})
	to, err := url.Parse(r.header.Get("Location"))
	if err != nil || !strings.HasPrefix(to.String(), op.Issuer()+"/authorize?") {
		t.Fatalf("login sends to %q", r.header.Get("Location"))
	}
	p := to.Query()
	if p.Get("code_challenge_method") != "S256" || p.Get("code_challenge") == "" || p.Get("state") == "" || p.Get("nonce") == "" ||
		!slices.Contains(strings.Fields(p.Get("scope")), "openid") || p.Get("response_type") != "code" ||
		p.Get("client_id") != oidcClientID || p.Get("redirect_uri") != e.srv.URL+"/admin/callback" {
		t.Fatalf("the authorization request: %v", p)
	}
	c := cookiesOf(r)["__Host-wr_signin"]
	if c == nil || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
		t.Fatalf("the sign-in cookie: %q", r.header.Values("Set-Cookie"))
	}

	op.SetNextLogin(subject)
	browser := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := browser.Get(to.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || back.Query().Get("state") != p.Get("state") {
		t.Fatalf("the provider answered %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return back.RequestURI(), []string{"Cookie", c.Name + "=" + c.Value}
}

// pageCode is the stable code of a sign-in failure's page.
func pageCode(t *testing.T, r response) string {
	t.Helper()
	m := regexp.MustCompile(`data-code="([a-z_]+)"`).FindSubmatch(r.body)
	if m == nil || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("not a sign-in page: %s %s", r.header.Get("Content-Type"), r.body)
	}
	return string(m[1])
}

// checkSignIn: a person signs in through a real OpenID provider (code
// flow, PKCE, state, nonce), and their session cookie is a credential of
// the admin API with their groups' role, until they sign out or an admin
// ends their sessions. Each way a sign-in fails is its page and code.
func (k *contract) checkSignIn(t *testing.T, rdb *redis.Client, plain *env) {
	// Without a provider, there is no sign-in.
	k.check(t, plain, call{method: "GET", path: "/admin/login", status: 404, code: "oidc_disabled"})
	k.check(t, plain, call{method: "GET", path: "/admin/callback?state=s&code=c", status: 404, code: "oidc_disabled"})
	opts := decodeJSON[struct{ OIDC, Token bool }](t, k.check(t, plain, call{method: "GET", path: "/admin/v1/signin-options", status: 200}))
	if opts.OIDC || !opts.Token {
		t.Fatalf("sign-in options with the admin token only: %+v", opts)
	}

	e, op := k.signInEnv(t, rdb, "")
	opts = decodeJSON[struct{ OIDC, Token bool }](t, k.check(t, e, call{method: "GET", path: "/admin/v1/signin-options", status: 200}))
	if !opts.OIDC || !opts.Token {
		t.Fatalf("sign-in options with a provider: %+v", opts)
	}
	// pageCheck is k.check of a call answered by a sign-in page, whose
	// code is in the page.
	pageCheck := func(c call) {
		t.Helper()
		want := c.code
		c.code = ""
		r := k.check(t, e, c)
		if got := pageCode(t, r); got != want {
			t.Fatalf("%s: page code %s, want %s", c.path, got, want)
		}
	}
	// session signs subject in and returns their session cookie header.
	session := func(subject string) []string {
		t.Helper()
		cb, cookie := k.beginSignIn(t, e, op, subject)
		r := k.check(t, e, call{method: "GET", path: cb, header: cookie, status: 303})
		c := cookiesOf(r)["__Host-wr_admin"]
		if r.header.Get("Location") != "/admin" || c == nil || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.Path != "/" ||
			c.MaxAge != int(adminsession.DefaultAbsolute/time.Second) {
			t.Fatalf("callback: to %q, cookies %q", r.header.Get("Location"), r.header.Values("Set-Cookie"))
		}
		return []string{"Cookie", c.Name + "=" + c.Value}
	}

	cb, cookie := k.beginSignIn(t, e, op, kim.Subject)
	r := k.check(t, e, call{method: "GET", path: cb, header: cookie, status: 303})
	c := cookiesOf(r)["__Host-wr_admin"]
	if c == nil {
		t.Fatalf("no session cookie: %q", r.header.Values("Set-Cookie"))
	}
	kims := []string{"Cookie", c.Name + "=" + c.Value}
	me := decodeJSON[meJSON](t, k.check(t, e, call{method: "GET", path: "/admin/v1/me", header: kims, status: 200}))
	if me.Actor != (actor.Actor{Kind: actor.KindOIDC, Name: kim.Email}) || me.Role != "admin" || !me.Admin {
		t.Fatalf("me, signed in: %+v", me)
	}
	// The same answer again: the state is spent.
	pageCheck(call{method: "GET", path: cb, header: append(slices.Clone(cookie), "X-Forwarded-For", testClient(t)), status: 400, code: "invalid_state"})

	// Kim's change is audited with her name.
	k.check(t, e, call{method: "PATCH", path: "/admin/v1/queues/" + e.queue, body: `{"paused":false}`, header: append([]string{"Content-Type", "application/json"}, kims...), status: 200})
	log := decodeJSON[auditJSON](t, k.check(t, e, call{method: "GET", path: "/admin/v1/queues/" + e.queue + "/audit", header: kims, status: 200}))
	if len(log.Entries) != 1 || log.Entries[0].Actor == nil || *log.Entries[0].Actor != me.Actor {
		t.Fatalf("kim's change is not audited with her name: %+v", log.Entries)
	}

	// A viewer through their groups may read, not change.
	vics := session(vic.Subject)
	if me := decodeJSON[meJSON](t, k.check(t, e, call{method: "GET", path: "/admin/v1/me", header: vics, status: 200})); me.Role != "viewer" || me.Actor.Name != vic.Email {
		t.Fatalf("me, vic: %+v", me)
	}
	k.check(t, e, call{method: "PATCH", path: "/admin/v1/queues/" + e.queue, body: `{"paused":true}`, header: append([]string{"Content-Type", "application/json"}, vics...), status: 403, code: "forbidden_role"})

	// Signing out ends the session; from another site's page it cannot.
	k.check(t, e, call{method: "POST", path: "/admin/logout", header: append(slices.Clone(vics), "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"), status: 403, code: "cross_site_admin"})
	r = k.check(t, e, call{method: "POST", path: "/admin/logout", header: vics, status: 204})
	if c := cookiesOf(r)["__Host-wr_admin"]; c == nil || c.MaxAge >= 0 {
		t.Fatalf("logout kept the cookie: %q", r.header.Values("Set-Cookie"))
	}
	k.check(t, e, call{method: "GET", path: "/admin/v1/me", header: append(slices.Clone(vics), "X-Forwarded-For", testClient(t)), status: 401, code: "unauthorized"})
	k.check(t, e, call{method: "POST", path: "/admin/logout", status: 204}) // no session: nothing to end

	// An admin ends every session of a person.
	other := session(kim.Subject)
	r = k.check(t, e, call{method: "DELETE", path: "/admin/v1/sessions/" + url.PathEscape(kim.Email), header: kims, status: 200})
	if got := decodeJSON[struct {
		Person string
		Ended  int
	}](t, r); got.Person != kim.Email || got.Ended != 2 {
		t.Fatalf("ending kim's sessions: %s", r.body)
	}
	k.check(t, e, call{method: "GET", path: "/admin/v1/me", header: append(slices.Clone(other), "X-Forwarded-For", testClient(t)), status: 401, code: "unauthorized"})

	// The ways a sign-in fails, each from an address of its own.
	fresh := func(h []string) []string { return append(slices.Clone(h), "X-Forwarded-For", testClient(t)) }
	pageCheck(call{method: "GET", path: "/admin/callback?error=access_denied&state=x", header: fresh(nil), status: 401, code: "signin_denied"})
	cb, cookie = k.beginSignIn(t, e, op, sam.Subject)
	pageCheck(call{method: "GET", path: cb, header: fresh(cookie), status: 403, code: "no_role"})
	cb, cookie = k.beginSignIn(t, e, op, kim.Subject)
	forged, _ := url.Parse(cb)
	fq := forged.Query()
	fq.Set("code", "not-the-code")
	forged.RawQuery = fq.Encode()
	pageCheck(call{method: "GET", path: forged.RequestURI(), header: fresh(cookie), status: 401, code: "invalid_code"})
	cb, cookie = k.beginSignIn(t, e, op, kim.Subject)
	op.SignWithOtherKey(true)
	pageCheck(call{method: "GET", path: cb, header: fresh(cookie), status: 401, code: "invalid_id_token"})
	cb, cookie = k.beginSignIn(t, e, op, kim.Subject)
	pageCheck(call{method: "GET", path: cb, header: fresh(kims), status: 400, code: "invalid_state"}) // another browser's answer

	// Failed sign-ins only a guesser can make (a code the provider
	// refuses) lock the address out, like wrong tokens.
	client := testClient(t)
	for range lockout.DefaultPolicy.MaxFailures {
		cb, cookie := k.beginSignIn(t, e, op, kim.Subject)
		made, _ := url.Parse(cb)
		mq := made.Query()
		mq.Set("code", "made-up")
		made.RawQuery = mq.Encode()
		pageCheck(call{method: "GET", path: made.RequestURI(), header: append(slices.Clone(cookie), "X-Forwarded-For", client), status: 401, code: "invalid_code"})
	}
	pageCheck(call{method: "GET", path: cb, header: append(slices.Clone(cookie), "X-Forwarded-For", client), status: 429, code: "too_many_attempts"})

	// The provider gone: after it was found, and before.
	cb, cookie = k.beginSignIn(t, e, op, kim.Subject)
	op.Close()
	pageCheck(call{method: "GET", path: cb, header: fresh(cookie), status: 503, code: "oidc_unavailable"})
	dead, _ := k.signInEnv(t, rdb, deadURL(t))
	r = k.check(t, dead, call{method: "GET", path: "/admin/login", status: 503})
	if got := pageCode(t, r); got != "oidc_unavailable" {
		t.Fatalf("login without the provider: %s", got)
	}
}

// deadURL is an http URL where nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}
