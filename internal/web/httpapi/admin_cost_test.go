package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/backoffice/adminsession"
	"github.com/waitroom/waitroom/internal/backoffice/apitoken"
	"github.com/waitroom/waitroom/internal/backoffice/lockout"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/web/adminapi"
)

// credentialEnv is a server whose admin credentials are checked on a
// Redis client of their own, counted, with the credentials' caches on a
// clock that stands still (so "within CacheFor" holds however slow the
// machine), and a valid API token, session and break-glass token.
type credentialEnv struct {
	e                 *env
	count             *redistest.Counter
	apiToken, session string
	tokens            *apitoken.Tokens
	sessions          *adminsession.Sessions
}

func newCredentialEnv(t testing.TB) *credentialEnv {
	t.Helper()
	admin := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { _ = admin.Close() })
	count := &redistest.Counter{}
	admin.AddHook(count)
	now := time.Now()
	frozen := func() time.Time { return now }
	tokens, err := apitoken.New(admin, []byte("cost-test-secret-0123456789abcdef"), apitoken.WithClock(frozen))
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := adminsession.New(admin, adminsession.Options{Now: frozen})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, tok, err := tokens.Create(ctx, apitoken.Request{Name: "cost", Grant: adminauth.Grant{Role: adminauth.Admin}})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := sessions.Start(ctx, adminsession.Person{Name: "cost@example.com", Grants: []adminauth.Grant{{Role: adminauth.Viewer}}})
	if err != nil {
		t.Fatal(err)
	}
	proxies, err := clientip.New([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, ClientIP: proxies, APITokens: tokens, Sessions: sessions,
		Redis: admin}) // the lockout counted too
	return &credentialEnv{e: e, count: count, apiToken: tok, session: sess, tokens: tokens, sessions: sessions}
}

// request is GET /admin/v1/me, which needs no Redis beyond the
// credential, from client with header h.
func (c *credentialEnv) request(client string, h ...string) *http.Request {
	r := httptest.NewRequest("GET", "/admin/v1/me", nil)
	r.RemoteAddr = "127.0.0.1:1234"
	r.Header.Set("X-Forwarded-For", client)
	for i := 0; i+1 < len(h); i += 2 {
		r.Header.Set(h[i], h[i+1])
	}
	return r
}

// commands serves the request and returns its status and the Redis
// commands the credential's check sent.
func (c *credentialEnv) commands(r *http.Request) (int, int64) {
	before := c.count.N()
	w := httptest.NewRecorder()
	c.e.h.ServeHTTP(w, r)
	return w.Code, c.count.N() - before
}

// TestAdminCredentialRedisCommands counts the Redis commands each kind of
// credential costs an admin request: a valid API token or session that
// this replica checked less than a second ago costs none (the revocation
// check is that second: apitoken.CacheFor); once a second it is read
// again (one script). The break-glass token is judged by the lockout
// script each time (one). A wrong token costs its lookup and the
// lockout's count (two); once this replica knows its address locked, the
// admin token costs nothing and an API token its lookup (one), for a valid
// one from that address still passes.
func TestAdminCredentialRedisCommands(t *testing.T) {
	c := newCredentialEnv(t)
	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	cookie := []string{"Cookie", adminapi.CookieName(false) + "=" + c.session}
	client := testClient(t)
	// Load every script once: a first call may be followed by a load and a call again.
	for _, h := range [][]string{bearer(adminToken), bearer("wrt_aaaaaaaaaaaaaaaa_" + "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"),
		{"Cookie", adminapi.CookieName(false) + "=" + strings.Repeat("A", 43)}} {
		c.e.h.ServeHTTP(httptest.NewRecorder(), c.request(testClient(t), h...))
	}

	for _, step := range []struct {
		name   string
		client string
		h      []string
		status int
		want   int64
	}{
		{"API token, first use", client, bearer(c.apiToken), 200, 1},
		{"API token, checked within the second", client, bearer(c.apiToken), 200, 0},
		{"API token, again", client, bearer(c.apiToken), 200, 0},
		{"session, first use", client, cookie, 200, 1},
		{"session, within the second", client, cookie, 200, 0},
		{"break-glass token", client, bearer(adminToken), 200, 1},
		{"break-glass token, again", client, bearer(adminToken), 200, 1},
		{"no credential", client, nil, 401, 0},
	} {
		status, n := c.commands(c.request(step.client, step.h...))
		if status != step.status || n != step.want {
			t.Errorf("%s: %d with %d Redis commands, want %d with %d", step.name, status, n, step.status, step.want)
		}
	}

	// Guessing: each wrong token is looked up and counted (2), until the
	// address is locked; then this replica refuses it without Redis.
	guesser := testClient(t)
	wrong := bearer("wrt_aaaaaaaaaaaaaaaa_" + "ccccccccccccccccccccccccccccccccccccccccccc")
	for i := 0; i < lockout.DefaultPolicy.MaxFailures; i++ {
		if status, n := c.commands(c.request(guesser, wrong...)); status != 401 || n != 2 {
			t.Fatalf("guess %d: %d with %d commands", i+1, status, n)
		}
	}
	// The admin token from it is refused unjudged; an API token is looked
	// up first (it may be valid: see below), then refused.
	if status, n := c.commands(c.request(guesser, bearer(adminToken)...)); status != 429 || n != 0 {
		t.Fatalf("the admin token from a locked address: %d with %d commands", status, n)
	}
	if status, n := c.commands(c.request(guesser, wrong...)); status != 429 || n != 1 {
		t.Fatalf("an API token guess from a locked address: %d with %d commands", status, n)
	}
	// A valid token or session from it still passes, trusted: no command.
	for _, h := range [][]string{bearer(c.apiToken), cookie} {
		if status, n := c.commands(c.request(guesser, h...)); status != 200 || n != 0 {
			t.Fatalf("a valid credential from a locked address: %d with %d commands", status, n)
		}
	}
}

// BenchmarkAdminCredential is the server CPU of an admin request (GET
// /admin/v1/me) by credential, the handler in process, real Redis:
//
//	go test -run '^$' -bench AdminCredential -benchtime 2000x -count 5 ./internal/web/httpapi
func BenchmarkAdminCredential(b *testing.B) {
	c := newCredentialEnv(b)
	for _, k := range []struct {
		name string
		h    []string
	}{
		{"admin_token", []string{"Authorization", "Bearer " + adminToken}},
		{"api_token_cached", []string{"Authorization", "Bearer " + c.apiToken}},
		{"session_cached", []string{"Cookie", adminapi.CookieName(false) + "=" + c.session}},
	} {
		b.Run(k.name, func(b *testing.B) {
			client := testClient(b)
			for b.Loop() {
				w := httptest.NewRecorder()
				c.e.h.ServeHTTP(w, c.request(client, k.h...))
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
