package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/backoffice/lockout"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/clientaddr"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// behindProxy trusts the test's loopback peer as a proxy, so each test
// speaks for a client address of its own (X-Forwarded-For) and the
// package's tests, all from 127.0.0.1, do not share one lockout budget.
func behindProxy(t testing.TB) *clientip.Resolver {
	t.Helper()
	r, err := clientip.New([]string{"127.0.0.0/8", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// without is e's queue, store and credentials served by a server of
// their own, whose options change makes.
func (e *env) without(change func(*Options)) *env {
	e.t.Helper()
	o := e.opts
	change(&o)
	h := New(o)
	srv := httptest.NewServer(h)
	e.t.Cleanup(srv.Close)
	c := *e
	c.srv, c.h, c.opts = srv, h, o
	return &c
}

// testClient is a client address no other test (or other call) uses:
// each has a lockout and rate-limit budget of its own, however the
// package's tests run in parallel. A random address of 198.18.0.0/15 was
// not enough: other tests speak from fixed addresses of that range, and
// one test got 429 where it wanted 401.
func testClient(t testing.TB) string {
	t.Helper()
	return clientaddr.New(t).Addr(1)
}

// asClient is the headers of an admin call by client with token.
func asClient(client, token string) []string {
	return []string{"X-Forwarded-For", client, "Authorization", "Bearer " + token}
}

// Two replicas on one Redis share one budget per client address: ten
// wrong tokens are answered 401, whichever replica they reach, and then
// the address gets 429 with Retry-After, even with the right token, while
// another address is served.
func TestAdminLockoutSharedByReplicas(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	opts := Options{AdminToken: adminToken, ClientIP: behindProxy(t)}
	replicas := []*env{newEnv(t, rdb, slow, testTimeout, opts), newEnv(t, rdb, slow, testTimeout, opts)}
	attacker, operator := testClient(t), testClient(t)
	path := "/admin/v1/queues"
	for i := range lockout.DefaultPolicy.MaxFailures {
		wantError(t, replicas[i%2].do("GET", path, "", asClient(attacker, fmt.Sprintf("guess-%d", i))...), 401, "unauthorized")
	}
	for i, e := range replicas {
		for _, token := range []string{"guess-again", adminToken} {
			r := e.do("GET", path, "", asClient(attacker, token)...)
			wantError(t, r, 429, "too_many_attempts")
			if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
				t.Fatalf("replica %d: Retry-After %q, want 1-60 s (a first lock of a minute)", i, r.header.Get("Retry-After"))
			}
		}
		if r := e.do("GET", path, "", asClient(operator, adminToken)...); r.status != 200 {
			t.Fatalf("replica %d: another address with the right token: %d %s", i, r.status, r.body)
		}
	}
}

// Only a wrong token actually presented counts as a failure. Requests any
// page can make a browser send (no token, a preflight, a cross-site call)
// never lock the operator out: 20 of each, twice the budget, and the
// right token still works from the same address. Ten wrong tokens from
// the admin's own origin still lock it, the right token included.
func TestAdminLockoutCountsOnlyPresentedTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, ClientIP: behindProxy(t)})
	const path, tries = "/admin/v1/queues", 2 * 10
	if tries <= lockout.DefaultPolicy.MaxFailures {
		t.Fatalf("%d tries do not exceed the budget of %d", tries, lockout.DefaultPolicy.MaxFailures)
	}
	for _, tc := range []struct {
		name   string
		method string
		header []string // besides X-Forwarded-For
		status int
		code   string
	}{
		{"no Authorization", "GET", nil, 401, "unauthorized"},
		{"Basic credentials", "GET", []string{"Authorization", "Basic YWRtaW46YWRtaW4="}, 401, "unauthorized"},
		{"Bearer without a token", "GET", []string{"Authorization", "Bearer   "}, 401, "unauthorized"},
		{"a token without a scheme", "GET", []string{"Authorization", "guess"}, 401, "unauthorized"},
		{"an image tag from another site", "GET", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Dest", "image"}, 403, "cross_site_admin"},
		{"a same-origin preflight", "OPTIONS", []string{"Origin", e.srv.URL, "Access-Control-Request-Method", "PATCH", "Access-Control-Request-Headers", "authorization"}, 401, "unauthorized"},
		{"OPTIONS with a wrong token", "OPTIONS", []string{"Authorization", "Bearer guess"}, 401, "unauthorized"},
		{"a cross-site preflight", "OPTIONS", []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site", "Access-Control-Request-Method", "GET"}, 403, "cross_site_admin"},
		{"Sec-Fetch-Site cross-site, wrong token", "GET", []string{"Sec-Fetch-Site", "cross-site", "Authorization", "Bearer guess"}, 403, "cross_site_admin"},
		{"Sec-Fetch-Site same-site, wrong token", "GET", []string{"Sec-Fetch-Site", "same-site", "Authorization", "Bearer guess"}, 403, "cross_site_admin"},
		{"Origin of another site, wrong token", "PATCH", []string{"Origin", "https://evil.example", "Authorization", "Bearer guess"}, 403, "cross_site_admin"},
		{"Origin null, wrong token", "DELETE", []string{"Origin", "null", "Authorization", "Bearer guess"}, 403, "cross_site_admin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := testClient(t)
			h := append([]string{"X-Forwarded-For", client}, tc.header...)
			for range tries {
				wantError(t, e.do(tc.method, path, "", h...), tc.status, tc.code)
			}
			if r := e.do("GET", path, "", asClient(client, adminToken)...); r.status != 200 {
				t.Fatalf("the right token after %d of these: %d %s", tries, r.status, r.body)
			}
		})
	}

	// Cross-site is refused before the token is even looked at: the
	// right token too.
	for _, h := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "https://evil.example"}} {
		wantError(t, e.do("GET", path, "", append(asClient(testClient(t), adminToken), h...)...), 403, "cross_site_admin")
	}
	// The back office page itself, and tools without a browser, get in.
	for _, h := range [][]string{{"Sec-Fetch-Site", "same-origin"}, {"Sec-Fetch-Site", "none"}, {"Origin", e.srv.URL}, nil} {
		if r := e.do("PATCH", "/admin/v1/queues/"+e.queue, `{"paused":false}`, append(asClient(testClient(t), adminToken), h...)...); r.status != 200 {
			t.Fatalf("right token with %q: %d %s", h, r.status, r.body)
		}
	}

	t.Run("wrong tokens still lock", func(t *testing.T) {
		client := testClient(t)
		own := []string{"Sec-Fetch-Site", "same-origin", "Origin", e.srv.URL}
		for i := range lockout.DefaultPolicy.MaxFailures {
			wantError(t, e.do("GET", path, "", append(asClient(client, fmt.Sprintf("guess-%d", i)), own...)...), 401, "unauthorized")
		}
		for _, token := range []string{adminToken, "guess"} {
			r := e.do("GET", path, "", append(asClient(client, token), own...)...)
			wantError(t, r, 429, "too_many_attempts")
			if r.header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		}
		// While locked, a request without a token is refused without a
		// look at Redis, and lets nothing in either.
		wantError(t, e.do("GET", path, "", "X-Forwarded-For", client), 401, "unauthorized")
	})
}

// Each lock is twice the last: Retry-After grows lock after lock.
func TestAdminLockoutBackOff(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out real lockout back-offs, ~11 s; the whole suite runs it")
	}
	t.Parallel()
	rdb := redistest.Client(t)
	// The server's policy with seconds for minutes, so the test is short.
	short := lockout.Policy{MaxFailures: 3, Window: time.Minute, BaseLock: time.Second, MaxLock: 4 * time.Second, Memory: time.Hour}
	e := newEnv(t, rdb, slow, testTimeout, Options{AdminToken: adminToken, ClientIP: behindProxy(t), AdminLockout: short})
	client := testClient(t)
	path := "/admin/v1/queues"
	for _, want := range []int{1, 2, 4, 4} {
		for range short.MaxFailures {
			wantError(t, e.do("GET", path, "", asClient(client, "guess")...), 401, "unauthorized")
		}
		r := e.do("GET", path, "", asClient(client, adminToken)...)
		wantError(t, r, 429, "too_many_attempts")
		if got := r.header.Get("Retry-After"); got != strconv.Itoa(want) {
			t.Fatalf("Retry-After %q, want %d", got, want)
		}
		// The right token is not let in early; once the lock is over it is.
		wait.For(t, time.Duration(want+5)*time.Second, "the right token once the lock is over", func() (bool, string) {
			return e.do("GET", path, "", asClient(client, adminToken)...).status == 200, ""
		})
	}
}

// Without Redis the admin API answers 503 within its bound and lets no
// token through, right or wrong; unwired (no Options.Redis) likewise.
func TestAdminWithoutRedis(t *testing.T) {
	t.Parallel()
	ctr, rdb := outageRedis(t)
	e := newEnv(t, rdb, slow, 500*time.Millisecond, Options{AdminToken: adminToken, ClientIP: behindProxy(t)})
	client := testClient(t)
	if r := e.do("GET", "/admin/v1/queues", "", asClient(client, adminToken)...); r.status != 200 {
		t.Fatalf("with Redis: %d %s", r.status, r.body)
	}
	ctx := context.Background()
	if err := ctr.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{adminToken, "guess"} {
		start := time.Now()
		r := e.do("GET", "/admin/v1/queues", "", asClient(client, token)...)
		took := time.Since(start)
		wantError(t, r, 503, "unavailable")
		if r.header.Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
		// The lockout's bound is 2 s; the margin is for a loaded machine.
		if took > 6*time.Second {
			t.Fatalf("a frozen Redis held an admin call %s", took)
		}
	}
	if err := ctr.Unpause(ctx); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 30*time.Second, "the right token once Redis is back", func() (bool, string) {
		return e.do("GET", "/admin/v1/queues", "", asClient(client, adminToken)...).status == 200, ""
	})

	unwired := e.without(func(o *Options) { o.Redis = nil })
	wantError(t, unwired.do("GET", "/admin/v1/queues", "", asClient(client, adminToken)...), 503, "unavailable")
}

// auditEntries reads a queue's audit log through the API.
func (e *env) auditEntries(query string) []audit.Entry {
	e.t.Helper()
	r := e.do("GET", "/admin/v1/queues/"+e.queue+"/audit"+query, "", "Authorization", "Bearer "+adminToken)
	var body struct {
		Queue   string        `json:"queue"`
		Entries []audit.Entry `json:"entries"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &body) != nil || body.Queue != e.queue {
		e.t.Fatalf("audit: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), adminToken) {
		e.t.Fatalf("the admin token is in the audit log: %s", r.body)
	}
	return body.Entries
}

func changesJSON(t *testing.T, c []audit.Change) string {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every admin change is in the queue's audit log, newest first, with the
// client's address and each value old -> new; the log needs the token.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, InsecureUserIDs: true, ClientIP: behindProxy(t)})
	client := testClient(t)
	if got := e.auditEntries(""); len(got) != 0 {
		t.Fatalf("a new queue's audit log: %+v", got)
	}
	admin := func(method, path, body string) {
		t.Helper()
		if r := e.do(method, "/admin/v1/queues/"+e.queue+path, body, asClient(client, adminToken)...); r.status/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, r.status, r.body)
		}
	}
	admin("PATCH", "", `{"refill_size":7,"paused":true,"opens_at":"2031-01-02T03:04:05Z"}`)
	admin("PUT", "/refill-size", `{"refill_size":9}`)
	admin("PATCH", "", `{"opens_at":null}`)
	// Paused, so both wait (the ticks are an hour apart).
	e.enter("u1")
	e.enter("u2")
	admin("PATCH", "", `{"paused":false}`)
	admin("DELETE", "/users/u2", "")
	admin("DELETE", "/users/nobody", "")
	// Refused changes are not changes.
	wantError(t, e.do("PATCH", "/admin/v1/queues/"+e.queue, `{"refill_size":0}`, asClient(client, adminToken)...), 400, "invalid_settings")

	got := e.auditEntries("")
	want := []struct{ action, target, changes string }{
		{"remove_user", "nobody", `[{"field":"place","old":{"status":"NOT_WAITING"},"new":"removed"}]`},
		{"remove_user", "u2", `[{"field":"place","old":{"status":"WAITING","position":2},"new":"removed"}]`},
		{"settings", "", `[{"field":"paused","old":true,"new":false}]`},
		{"settings", "", `[{"field":"opens_at","old":"2031-01-02T03:04:05Z","new":null}]`},
		{"refill_size", "", `[{"field":"refill_size","old":7,"new":9}]`},
		{"settings", "", fmt.Sprintf(`[{"field":"opens_at","old":null,"new":"2031-01-02T03:04:05Z"},{"field":"paused","old":false,"new":true},{"field":"refill_size","old":%d,"new":7}]`, slow.RefillSize)},
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(got), len(want), got)
	}
	now := time.Now()
	for i, w := range want {
		g := got[i]
		if g.Action != w.action || g.Target != w.target || changesJSON(t, g.Changes) != w.changes {
			t.Errorf("entry %d: %s %q %s, want %s %q %s", i, g.Action, g.Target, changesJSON(t, g.Changes), w.action, w.target, w.changes)
		}
		if g.ClientIP != client || g.Queue != e.queue || g.RequestID == "" {
			t.Errorf("entry %d: client %q queue %q request %q", i, g.ClientIP, g.Queue, g.RequestID)
		}
		if at := time.UnixMilli(g.AtMS); at.Before(now.Add(-time.Minute)) || at.After(now.Add(5*time.Second)) {
			t.Errorf("entry %d at %s, want about now (Redis clock)", i, at)
		}
		if i > 0 && g.AtMS > got[i-1].AtMS {
			t.Errorf("entry %d is newer than entry %d", i, i-1)
		}
	}

	if got := e.auditEntries("?limit=2"); len(got) != 2 || got[0].Target != "nobody" {
		t.Fatalf("limit=2: %+v", got)
	}
	for _, q := range []string{"?limit=0", "?limit=1001", "?limit=x"} {
		wantError(t, e.do("GET", "/admin/v1/queues/"+e.queue+"/audit"+q, "", "Authorization", "Bearer "+adminToken), 400, "invalid_limit")
	}
	wantError(t, e.do("GET", "/admin/v1/queues/nope/audit", "", "Authorization", "Bearer "+adminToken), 404, "queue_not_found")
	wantError(t, e.do("GET", "/admin/v1/queues/"+e.queue+"/audit", "", "X-Forwarded-For", testClient(t)), 401, "unauthorized")
	wantError(t, e.do("GET", "/admin/v1/queues/"+e.queue+"/audit", "", asClient(testClient(t), "guess")...), 401, "unauthorized")
}

// The log keeps the newest audit.MaxEntries changes of a queue.
func TestAuditLogBounded(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	e := newEnv(t, rdb, slow, testTimeout, Options{AdminToken: adminToken})
	// Older entries written straight to Redis, to keep the test short.
	pipe := rdb.Pipeline()
	for i := range audit.MaxEntries {
		pipe.LPush(context.Background(), rediskeys.Audit(e.queue), fmt.Sprintf(`{"at_ms":1,"client_ip":"x","queue":%q,"action":"old %d","changes":[]}`, e.queue, i))
	}
	if _, err := pipe.Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := e.patch(`{"max_active":5}`); r.status != 200 {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	if n := rdb.LLen(context.Background(), rediskeys.Audit(e.queue)).Val(); n != audit.MaxEntries {
		t.Fatalf("LLEN %d, want %d", n, audit.MaxEntries)
	}
	got := e.auditEntries("?limit=1000")
	if len(got) != audit.MaxEntries || got[0].Action != "settings" || got[len(got)-1].Action != "old 1" {
		t.Fatalf("%d entries, newest %q, oldest %q", len(got), got[0].Action, got[len(got)-1].Action)
	}
}

// A change made while the audit log cannot be written stays made.
func TestAuditWriteFailureKeepsTheChange(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { dead.Close() })
	deadAudit, _ := audit.New(dead)
	e := newEnv(t, rdb, slow, testTimeout, Options{AdminToken: adminToken, Audit: deadAudit})
	if r := e.patch(`{"max_active":42}`); r.status != 200 {
		t.Fatalf("patch with the audit log down: %d %s", r.status, r.body)
	}
	if aq := e.adminQueue(); aq.MaxActive != 42 {
		t.Fatalf("max_active %d, want 42", aq.MaxActive)
	}
}

// Neither the admin token nor a guess at it reaches the log, whatever
// happens: calls, a lock, a change whose audit entry falls back to the log.
func TestAdminTokenNeverLogged(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	var buf syncBuffer
	e := newEnv(t, rdb, slow, testTimeout, Options{AdminToken: adminToken, ClientIP: behindProxy(t),
		Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	client := testClient(t)
	const guess = "guess-4f9d2c"
	for range lockout.DefaultPolicy.MaxFailures + 2 {
		e.do("GET", "/admin/v1/queues", "", asClient(client, guess)...)
	}
	other := testClient(t)
	if r := e.do("PATCH", "/admin/v1/queues/"+e.queue, `{"max_active":3}`, asClient(other, adminToken)...); r.status != 200 {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { dead.Close() })
	deadAudit, _ := audit.New(dead)
	e = e.without(func(o *Options) { o.Audit = deadAudit })
	if r := e.do("PATCH", "/admin/v1/queues/"+e.queue, `{"max_active":4}`, asClient(other, adminToken)...); r.status != 200 {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	log := buf.String()
	for _, want := range []string{"admin API locked", "audit log not written", `\"max_active\"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	for _, secret := range []string{adminToken, guess} {
		if strings.Contains(log, secret) {
			t.Errorf("the log holds %q:\n%s", secret, log)
		}
	}
}

// syncBuffer is a bytes.Buffer for a logger written from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
