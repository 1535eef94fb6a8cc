package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/backoffice/apitoken"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/testkit/envconfig"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/passledger"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/adminapi"
	"github.com/waitroom/waitroom/internal/web/httpkit"
	"github.com/waitroom/waitroom/internal/web/pages"
	"github.com/waitroom/waitroom/internal/web/publicapi"
	"github.com/waitroom/waitroom/internal/web/soldout"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

const adminToken = "httpapi-test-admin-token-0123456789" // config.MinAdminTokenBytes or more, as the service requires

type env struct {
	t     testing.TB
	srv   *httptest.Server
	h     http.Handler // the router srv serves
	queue string
	store *queue.Store
	rdb   *redis.Client
	// secure: the cookies are Secure, so their names have the __Host- prefix.
	secure bool
	// The credentials the server was given (Options), for tests that
	// issue or check their own.
	places *place.Credentials
	passes *pass.Passes
	tokens *apitoken.Tokens
	opts   Options // as New got them
}

// placeCookieName and passCookieName are the env's cookie names.
func (e *env) placeCookieName() string { return place.CookieName(e.queue, e.secure) }
func (e *env) passCookieName() string  { return gate.CookieName(e.queue, e.secure) }

// testTimeout bounds each store call in these tests.
const testTimeout = 2 * time.Second

// newEnv serves the real router over a store with one fresh queue whose
// calls end within timeout.
func newEnv(t testing.TB, rdb *redis.Client, settings queue.Settings, timeout time.Duration, opts Options) *env {
	t.Helper()
	name := fmt.Sprintf("h%d", time.Now().UnixNano())
	// Places moved to another device, as main wires them.
	moves := handoff.NewTracker(rdb, []string{name})
	store, err := queue.NewStore(rdb, []string{name}, settings, timeout, queue.WithRecentMoves(moves))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Handoffs == nil {
		opts.Handoffs = newHandoffs(t, rdb, store, moves)
	}
	return newEnvWithStore(t, rdb, store, name, opts)
}

// newHandoffs is the hand-over service of store with the public URL the
// tests use.
func newHandoffs(t testing.TB, rdb *redis.Client, store *queue.Store, moves *handoff.Tracker) *handoff.Service {
	t.Helper()
	h := handoff.New(rdb, store, moves, testTimeout)
	if err := h.SetPublicURL(testPublicURL); err != nil {
		t.Fatal(err)
	}
	return h
}

// newEnvWithStore serves the real router over store, whose one queue is
// name, with fresh credentials, keys and gate unless opts has them.
func newEnvWithStore(t testing.TB, rdb *redis.Client, store *queue.Store, name string, opts Options) *env {
	t.Helper()
	opts.Store = store
	if opts.Redis == nil {
		opts.Redis = rdb
	}
	if opts.APITokens == nil {
		opts.APITokens = newTokens(t, opts.Redis)
	}
	if opts.Places == nil {
		opts.Places, opts.Passes = newTrust(t, rdb)
	}
	if opts.Gate == nil {
		opts.Gate = newTestGate(t, rdb, store, name, opts.Passes, nil, !opts.CookieSecure)
	}
	if opts.Handoffs == nil {
		// A store built without WithRecentMoves answers far-back statuses
		// from its snapshot: such tests move no place (newEnv's store does).
		opts.Handoffs = newHandoffs(t, rdb, store, handoff.NewTracker(rdb, store.Queues()))
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	opts.Static = fstest.MapFS{
		"waiting.html": {Data: []byte("<!doctype html><title>waiting</title>")},
		"admin.html":   {Data: []byte("<!doctype html><title>admin</title>")},
		"style.css":    {Data: []byte("body{}")},
		"favicon.ico":  {Data: []byte(strings.Repeat("icon", 64))},
	}
	h := New(opts)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv, h: h, queue: name, store: store, rdb: rdb, secure: opts.CookieSecure,
		places: opts.Places, passes: opts.Passes, tokens: opts.APITokens, opts: opts}
}

// newTokens are API tokens on rdb with a key of the test's own, as the
// admin API makes them without Options.APITokens; the env keeps them, for
// tests that make tokens directly.
func newTokens(t testing.TB, rdb adminapi.Redis) *apitoken.Tokens {
	t.Helper()
	tokens, err := apitoken.New(rdb, []byte(rand.Text()+rand.Text()))
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

// newTestGate is waitroom's own gate for queue name, as main builds it.
func newTestGate(t testing.TB, rdb *redis.Client, store *queue.Store, name string, passes *pass.Passes, bypass []string, insecureCookie bool) *gate.Gate {
	t.Helper()
	uses, err := passledger.New(rdb, passledger.DefaultMaxClients, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	g, err := proxy.NewGate(context.Background(), proxy.GateOptions{
		Queue: name, Passes: passes, Admissions: store, Bypass: bypass, InsecureCookie: insecureCookie,
		SoldOut: soldout.New(store, pages.Default()), // as cmd/waitroom wires it
		Uses:    uses, Revoke: func(ctx context.Context, q, m string) error {
			_, err := queue.NewInspector(store).Remove(ctx, q, m)
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (e *env) do(method, path, body string, header ...string) response {
	e.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json") // as every client must (origin.JSONBody)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

// enter and status name users by plain ids: the env must be in insecure
// mode (Options.InsecureUserIDs).
func (e *env) enter(user string) publicapi.TicketResponse {
	e.t.Helper()
	body, _ := json.Marshal(publicapi.EnterRequest{UserID: &user})
	r := e.do("POST", "/api/v1/queues/"+e.queue+"/enter", string(body))
	return decodeTicket(e.t, r)
}

func (e *env) status(user string) publicapi.TicketResponse {
	e.t.Helper()
	r := e.do("GET", "/api/v1/queues/"+e.queue+"/status?user_id="+url.QueryEscape(user), "")
	return decodeTicket(e.t, r)
}

func decodeTicket(t testing.TB, r response) publicapi.TicketResponse {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var tk publicapi.TicketResponse
	if err := json.Unmarshal(r.body, &tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

// wantError checks the status and the stable error code.
func wantError(t *testing.T, r response, status int, code string) {
	t.Helper()
	var body httpkit.ErrorBody
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("error body %q is not JSON: %v", r.body, err)
	}
	if r.status != status || body.Error.Code != code || body.Error.Message == "" {
		t.Fatalf("got %d %s (%q), want %d %s", r.status, body.Error.Code, body.Error.Message, status, code)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error content type %q", ct)
	}
}

var slow = queue.Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour}

func TestEnterStatusLeave(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, TargetURL: "https://shop.example/order?event=7", InsecureUserIDs: true})
	// The first tick, which the scheduler applies at start: the ETA counts
	// to the next one.
	if _, err := e.store.Tick(context.Background(), e.queue); err != nil {
		t.Fatal(err)
	}

	a := e.enter("alice")
	if a.Status != queue.Entered || a.Position != 0 || a.ETASeconds == nil || *a.ETASeconds != 0 || a.PollAfterMS != 0 || a.Pass == "" || a.PlaceToken != "" {
		t.Fatalf("alice = %+v", a)
	}
	wantTarget := "https://shop.example/order?event=7&wr_pass=" + a.Pass
	if a.TargetURL != wantTarget {
		t.Fatalf("target url %q, want %q", a.TargetURL, wantTarget)
	}
	e.enter("bob")
	c := e.enter("carol")
	if c.Status != queue.Waiting || c.Position != 1 || c.Waiting != 1 || c.TargetURL != "" {
		t.Fatalf("carol = %+v", c)
	}
	if c.ETASeconds == nil || *c.ETASeconds < 1 || *c.ETASeconds > 3600 || c.PollAfterMS <= 0 {
		t.Fatalf("carol eta %v poll %dms", c.ETASeconds, c.PollAfterMS)
	}
	d := e.enter("dave 🎫 김")
	if st := e.status("dave 🎫 김"); st.Position != 2 || st.UserID != "dave 🎫 김" || st.Queue != e.queue {
		t.Fatalf("dave status = %+v (enter %+v)", st, d)
	}

	// Leave takes any user id, escaped in the path, and is idempotent.
	for i := 0; i < 2; i++ {
		r := e.do("DELETE", "/api/v1/queues/"+e.queue+"/users/"+url.PathEscape("dave 🎫 김"), "")
		if r.status != http.StatusNoContent {
			t.Fatalf("leave: %d %s", r.status, r.body)
		}
	}
	if st := e.status("dave 🎫 김"); st.Status != queue.NotWaiting {
		t.Fatalf("after leave: %+v", st)
	}
	slash := "a/b"
	e.enter(slash)
	if r := e.do("DELETE", "/api/v1/queues/"+e.queue+"/users/"+url.PathEscape(slash), ""); r.status != http.StatusNoContent {
		t.Fatalf("leave a/b: %d", r.status)
	}
	if st := e.status(slash); st.Status != queue.NotWaiting {
		t.Fatalf("a/b after leave: %+v", st)
	}

	r := e.do("GET", "/api/v1/queues/"+e.queue, "")
	var info publicapi.QueueInfoResponse
	if err := json.Unmarshal(r.body, &info); err != nil || r.status != 200 {
		t.Fatalf("queue info: %d %s", r.status, r.body)
	}
	if info.Waiting != 1 || info.Entered != 2 || info.RefillSize != 2 || info.RefillIntervalMS != 3600000 {
		t.Fatalf("queue info = %+v", info)
	}
}

func TestAdmin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, InsecureUserIDs: true})
	auth := []string{"Authorization", "Bearer " + adminToken}
	path := "/admin/v1/queues/" + e.queue

	wantError(t, e.do("GET", path, ""), 401, "unauthorized")
	wantError(t, e.do("GET", path, "", "Authorization", "Bearer wrong"), 401, "unauthorized")
	wantError(t, e.do("GET", path, "", "Authorization", adminToken), 401, "unauthorized")
	wantError(t, e.do("PUT", path+"/refill-size", `{"refill_size":5}`, "Authorization", "Bearer "+adminToken+"x"), 401, "unauthorized")

	r := e.do("PUT", path+"/refill-size", `{"refill_size":5}`, auth...)
	var aq adminQueueJSON
	if err := json.Unmarshal(r.body, &aq); err != nil || r.status != 200 || aq.RefillSize != 5 {
		t.Fatalf("set refill size: %d %s", r.status, r.body)
	}
	var pub publicapi.QueueInfoResponse
	if err := json.Unmarshal(e.do("GET", "/api/v1/queues/"+e.queue, "").body, &pub); err != nil || pub.RefillSize != 5 {
		t.Fatalf("public info after change: %+v", pub)
	}

	for _, body := range []string{`{"refill_size":0}`, `{"refill_size":100001}`, `{"refill_size":-3}`, `{}`, `{"refill_size":null}`} {
		wantError(t, e.do("PUT", path+"/refill-size", body, auth...), 400, "invalid_refill_size")
	}
	for _, body := range []string{`{"refill_size":"5"}`, `{"refill_size":2.5}`, `{"refillSize":5}`, `[5]`, `{"refill_size":5}{}`, ``} {
		wantError(t, e.do("PUT", path+"/refill-size", body, auth...), 400, "invalid_json")
	}
	wantError(t, e.do("PUT", "/admin/v1/queues/nope/refill-size", `{"refill_size":5}`, auth...), 404, "queue_not_found")

	// Users and ticks show up in the admin views.
	for i := 0; i < 8; i++ {
		e.enter(fmt.Sprintf("u%d", i))
	}
	for i := 0; i < 2; i++ {
		if err := e.rdb.HDel(context.Background(), "wr:{"+e.queue+"}:tick", "next_at_ms", "min_next_ms").Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.Tick(context.Background(), e.queue); err != nil {
			t.Fatal(err)
		}
	}
	if err := json.Unmarshal(e.do("GET", path, "", auth...).body, &aq); err != nil {
		t.Fatal(err)
	}
	// 5 entered on the bucket, 3 waited; tick 1 closed the first interval
	// (5 admitted) and moved 3, tick 2 closed the second (3 admitted).
	if aq.Waiting != 0 || aq.Entered != 8 || aq.Tokens != 5 || aq.LastTickAtMS == 0 || aq.AdmittedLastMinute != 8 {
		t.Fatalf("admin queue = %+v", aq)
	}
	// The interval in progress counts: two more walk in on the tokens.
	e.enter("late1")
	e.enter("late2")
	if err := json.Unmarshal(e.do("GET", path, "", auth...).body, &aq); err != nil || aq.AdmittedLastMinute != 10 {
		t.Fatalf("admitted last minute with the interval in progress: %+v (%v)", aq, err)
	}

	// The operator removes a user: out of the entered set, idempotent.
	for i := 0; i < 2; i++ {
		if r := e.do("DELETE", path+"/users/u1", "", auth...); r.status != http.StatusNoContent {
			t.Fatalf("admin remove: %d %s", r.status, r.body)
		}
	}
	if st := e.status("u1"); st.Status != queue.NotWaiting {
		t.Fatalf("u1 after removal: %+v", st)
	}
	wantError(t, e.do("DELETE", path+"/users/u2", ""), 401, "unauthorized")
	if st := e.status("u2"); st.Status != queue.Entered {
		t.Fatalf("u2 after an unauthorised removal: %+v", st)
	}
	var hist struct {
		Queue            string                  `json:"queue"`
		RefillIntervalMS int64                   `json:"refill_interval_ms"`
		Points           []adminapi.HistoryPoint `json:"points"`
	}
	if err := json.Unmarshal(e.do("GET", path+"/history", "", auth...).body, &hist); err != nil {
		t.Fatal(err)
	}
	if len(hist.Points) != 2 || hist.Points[0].Admitted != 5 || hist.Points[0].Waiting != 3 || hist.Points[1].Admitted != 3 {
		t.Fatalf("history = %+v", hist)
	}
	var all struct {
		Queues []adminQueueJSON `json:"queues"`
	}
	if err := json.Unmarshal(e.do("GET", "/admin/v1/queues", "", auth...).body, &all); err != nil || len(all.Queues) != 1 {
		t.Fatalf("all queues = %+v (%v)", all, err)
	}
}

func TestAdminDisabledWithoutToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{})
	wantError(t, e.do("GET", "/admin/v1/queues", ""), 403, "admin_disabled")
	wantError(t, e.do("GET", "/admin/v1/queues", "", "Authorization", "Bearer "), 403, "admin_disabled")
}

// Every bad request gets a clear JSON error, creates nothing, and the
// people already in line keep their places.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, InsecureUserIDs: true})
	for _, u := range []string{"in1", "in2", "w1", "w2", "w3"} {
		e.enter(u)
	}
	enter := "/api/v1/queues/" + e.queue + "/enter"
	status := "/api/v1/queues/" + e.queue + "/status"
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"empty user", "POST", enter, `{"user_id":""}`, 400, "invalid_user_id"},
		{"long user", "POST", enter, `{"user_id":"` + strings.Repeat("x", 129) + `"}`, 400, "invalid_user_id"},
		{"control char", "POST", enter, `{"user_id":"a\u0000b"}`, 400, "invalid_user_id"},
		{"newline", "POST", enter, `{"user_id":"a\nb"}`, 400, "invalid_user_id"},
		{"number user", "POST", enter, `{"user_id":42}`, 400, "invalid_json"},
		{"malformed", "POST", enter, `{"user_id":`, 400, "invalid_json"},
		{"not an object", "POST", enter, `"w1"`, 400, "invalid_json"},
		{"unknown field", "POST", enter, `{"user_id":"x","admin":true}`, 400, "invalid_json"},
		{"two objects", "POST", enter, `{"user_id":"x"}{"user_id":"y"}`, 400, "invalid_json"},
		{"user id and join token", "POST", enter, `{"user_id":"x","join_token":"y"}`, 400, "invalid_json"},
		{"join token when joins are off", "POST", enter, `{"join_token":"a.b.c"}`, 400, "invalid_join_token"},
		{"too large", "POST", enter, `{"user_id":"` + strings.Repeat("x", 5000) + `"}`, 413, "body_too_large"},
		{"unknown queue enter", "POST", "/api/v1/queues/nope/enter", `{"user_id":"x"}`, 404, "queue_not_found"},
		{"unknown queue status", "GET", "/api/v1/queues/nope/status?user_id=x", "", 404, "queue_not_found"},
		{"unknown queue info", "GET", "/api/v1/queues/nope", "", 404, "queue_not_found"},
		{"unknown queue leave", "DELETE", "/api/v1/queues/nope/users/x", "", 404, "queue_not_found"},
		{"braces queue", "POST", "/api/v1/queues/%7Bx%7D/enter", `{"user_id":"x"}`, 404, "queue_not_found"},
		{"status without user or place", "GET", status, "", 401, "invalid_place"},
		{"status invalid utf8", "GET", status + "?user_id=%FF%FE", "", 400, "invalid_user_id"},
		{"status too long", "GET", status + "?user_id=" + strings.Repeat("y", 129), "", 400, "invalid_user_id"},
		{"leave control char", "DELETE", "/api/v1/queues/" + e.queue + "/users/a%01b", "", 400, "invalid_user_id"},
		{"leave invalid utf8", "DELETE", "/api/v1/queues/" + e.queue + "/users/a%2Fb%C0", "", 400, "invalid_user_id"},
		{"wrong method", "GET", enter, "", 405, "method_not_allowed"},
		{"no route", "GET", "/api/v1/nothing", "", 404, "not_found"},
		{"unknown page queue", "GET", "/q/nope", "", 404, "queue_not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, e.do(tc.method, tc.path, tc.body), tc.status, tc.code)
		})
	}
	if keys := e.rdb.Keys(context.Background(), "wr:{nope}:*").Val(); len(keys) != 0 {
		t.Fatalf("bad requests created keys: %v", keys)
	}
	for i, u := range []string{"w1", "w2", "w3"} {
		if st := e.status(u); st.Status != queue.Waiting || st.Position != int64(i+1) {
			t.Fatalf("%s after bad requests: %+v", u, st)
		}
	}
}

func TestPagesAndHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{})
	r := e.do("GET", "/", "")
	if r.status != http.StatusFound || r.header.Get("Location") != "/q/"+e.queue {
		t.Fatalf("/ = %d to %q", r.status, r.header.Get("Location"))
	}
	for _, path := range []string{"/q/" + e.queue, "/admin", "/_waitroom/static/style.css", "/healthz", "/readyz", "/api/v1/queues/" + e.queue} {
		r := e.do("GET", path, "")
		if r.status != 200 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
		csp := r.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Fatalf("%s: CSP %q", path, csp)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("Referrer-Policy") != "no-referrer" {
			t.Fatalf("%s: security headers missing: %v", path, r.header)
		}
	}
	if r := e.do("HEAD", "/q/"+e.queue, ""); r.status != 200 {
		t.Fatalf("HEAD page: %d", r.status)
	}
	// A wrong link in a browser gets a page; API clients keep the JSON.
	r = e.do("GET", "/q/nope", "", "Accept", "text/html,application/xhtml+xml")
	if r.status != 404 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(string(r.body), "No such waiting line") {
		t.Fatalf("unknown queue page: %d %q", r.status, r.body)
	}
	if r := e.do("GET", "/favicon.ico", ""); r.status != 200 || len(r.body) < 100 {
		t.Fatalf("favicon: %d, %d bytes", r.status, len(r.body))
	}
}

// outageRedis is a Redis of the test's own, which it may pause or stop,
// reached with the service's own client options (dialling the container
// wherever Docker maps it now).
func outageRedis(t *testing.T) (*redistest.Container, *redis.Client) {
	t.Helper()
	ctr := redistest.NewContainer(t)
	redisOpts := envconfig.SingleRedis(t, envconfig.Load(t, nil))
	return ctr, ctr.Client(t, redisOpts)
}

// Redis goes away mid-test: requests answer 503 within the request
// timeout (no hang, no panic), and the service recovers by itself.
func TestRedisOutage(t *testing.T) {
	ctr, rdb := outageRedis(t)
	e := newEnv(t, rdb, slow, 500*time.Millisecond, Options{AdminToken: adminToken, InsecureUserIDs: true})
	ctx := context.Background()
	for _, u := range []string{"a", "b", "c"} {
		e.enter(u)
	}

	unavailable := func(phase string) {
		t.Helper()
		for _, req := range [][3]string{
			{"POST", "/api/v1/queues/" + e.queue + "/enter", `{"user_id":"d"}`},
			{"GET", "/api/v1/queues/" + e.queue + "/status?user_id=c", ""},
			// A request that timed out may still take effect once Redis
			// answers again, so leave someone who is not in line.
			{"DELETE", "/api/v1/queues/" + e.queue + "/users/nobody", ""},
			{"GET", "/api/v1/queues/" + e.queue, ""},
			{"GET", "/readyz", ""},
		} {
			start := time.Now()
			r := e.do(req[0], req[1], req[2])
			took := time.Since(start)
			t.Logf("%s: %s %s answered %d in %s", phase, req[0], req[1], r.status, took.Round(time.Millisecond))
			wantError(t, r, 503, "unavailable")
			// Not a performance figure: a request must end by its deadline
			// (500ms here), not by however long Redis stays away. The
			// margin is wide for a loaded machine.
			if took > 5*time.Second {
				t.Fatalf("%s: %s %s took %s with a 500ms request timeout", phase, req[0], req[1], took)
			}
			if strings.Contains(string(r.body), "dial") || strings.Contains(string(r.body), "i/o") {
				t.Fatalf("%s: Redis error leaked to the client: %s", phase, r.body)
			}
		}
		if r := e.do("GET", "/healthz", ""); r.status != 200 {
			t.Fatalf("%s: healthz %d", phase, r.status)
		}
	}
	recovered := func() {
		t.Helper()
		wait.For(t, 30*time.Second, "/readyz to answer 200 again", func() (bool, string) {
			r := e.do("GET", "/readyz", "")
			return r.status == 200, fmt.Sprintf("%d %s", r.status, r.body)
		})
	}

	// A frozen Redis: connections stay open, nothing answers.
	if err := ctr.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	unavailable("paused")
	if err := ctr.Unpause(ctx); err != nil {
		t.Fatal(err)
	}
	recovered()
	if st := e.status("c"); st.Status != queue.Waiting || st.Position != 1 {
		t.Fatalf("c after the freeze: %+v", st)
	}

	// A stopped Redis: connections refused. Its data is gone with it (the
	// test image runs without persistence), and the scripts must be loaded
	// again, which the queue does when Redis answers that it lacks one.
	if err := ctr.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	unavailable("stopped")
	if err := ctr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	recovered()
	if tk := e.enter("after"); tk.Status != queue.Entered {
		t.Fatalf("enter after restart: %+v", tk)
	}
	if st := e.status("after"); st.Status != queue.Entered {
		t.Fatalf("status after restart: %+v", st)
	}
}
