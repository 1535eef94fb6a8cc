package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/engine/scheduler"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/passledger"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/httpapi"
	"github.com/waitroom/waitroom/internal/web/outage"
	"github.com/waitroom/waitroom/web"
)

// The page, nginx and stack tests take minutes: the -short tier
// (go test -short ./...) leaves them to the whole suite.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped under -short (Chromium, nginx and whole-stack tests)")
		os.Exit(0)
	}
	// The tests mostly wait (on ticks, pages, containers): the package
	// used 106 s of CPU in 334 s run one test per core, go test's
	// default. Four at a time, unless -parallel says otherwise.
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "4")
	}
	os.Exit(redistest.Main(m))
}

const (
	adminToken = "e2e-test-admin-token-0123456789abcdef" // config.MinAdminTokenBytes or more
	issuer     = "https://waitroom.e2e.test"             // iss of the entry passes
)

// stack is one test's waitroom: a queue of its own on the shared Redis, a
// scheduler ticking it and the real HTTP server in front.
type stack struct {
	t      *testing.T
	queue  string
	queueB string // with stackOptions.twoRooms: the room of /b/
	store  *queue.Store
	places *place.Credentials // reads the place cookies the browsers hold
	url    string             // base URL of the server, http://127.0.0.1:port
	calls  *recorder
	rdb    *redis.Client
}

type stackOptions struct {
	settings  queue.Settings
	targetURL string        // where admitted users go; empty shows the turn panel
	redis     *redis.Client // nil: the package's shared Redis
	// joinSecret enables sites' join tokens (?join=); nil refuses them.
	joinSecret []byte
	// upstream, when set, puts the stack in gate mode in front of it.
	upstream *url.URL
	// behindProxy believes X-Forwarded-For from loopback peers, as behind
	// a load balancer on this host.
	behindProxy bool
	// trusted, when set, are the proxies whose X-Forwarded-For is
	// believed (WAITROOM_TRUSTED_PROXIES), in place of behindProxy's.
	trusted []string
	// bypassCIDRs are clients that pass the gate without a pass
	// (WAITROOM_GATE_BYPASS_CIDRS).
	bypassCIDRs []string
	// twoRooms adds a second queue, the room of /b/ (stack.queueB); the
	// first is the room of every other path (WAITROOM_GATE_ROUTES=/b/=B,
	// WAITROOM_GATE_QUEUE=A).
	twoRooms bool
	// gate and api, when set, change the gate's and the server's options
	// before they are built (failmode_test.go).
	gate func(*proxy.GateOptions, *queue.Store)
	api  func(*httpapi.Options)
	// storeOpts are the store's options beyond the hand-overs' tracker,
	// and update the queue's settings once it is seeded.
	storeOpts []queue.Option
	update    *queue.Update
}

func newStack(t *testing.T, o stackOptions) *stack {
	t.Helper()
	rdb := o.redis
	if rdb == nil {
		rdb = redistest.Client(t)
	}
	name := queueName(t)
	queues := []string{name}
	var routes []gate.Route
	if o.twoRooms {
		queues = append(queues, name+"-b")
		routes = []gate.Route{{Prefix: "/b/", Queue: name + "-b"}}
	}
	// Places moved to another device, as main wires them.
	moves := handoff.NewTracker(rdb, queues)
	store, err := queue.NewStore(rdb, queues, o.settings, 5*time.Second, append([]queue.Option{queue.WithRecentMoves(moves)}, o.storeOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := queue.NewInspector(store).Seed(ctx); err != nil {
		t.Fatal(err)
	}
	if o.update != nil {
		if err := queue.NewInspector(store).UpdateSettings(ctx, name, *o.update); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))

	sched, err := scheduler.Start(store, scheduler.Period(o.settings.RefillInterval), log, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sched.Stop(); err != nil {
			t.Errorf("scheduler stop: %v", err)
		}
	})

	static, err := fs.Sub(web.Static, "static")
	if err != nil {
		t.Fatal(err)
	}
	places, passes := newTrust(t)
	var join *place.Join
	if o.joinSecret != nil {
		if join, err = place.NewJoin(o.joinSecret); err != nil {
			t.Fatal(err)
		}
	}
	uses, err := passledger.New(rdb, passledger.DefaultMaxClients, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	bypassCIDRs, err := clientip.ParseRanges(o.bypassCIDRs)
	if err != nil {
		t.Fatal(err)
	}
	gateOpts := proxy.GateOptions{
		Unavailable: outage.Handler(outage.AtGate),
		Queue:       name, Routes: routes, Passes: passes, Admissions: store, Bypass: []string{"/static/"}, InsecureCookie: true,
		BypassCIDRs: bypassCIDRs, Uses: uses,
		Revoke: func(ctx context.Context, q, m string) error {
			_, err := queue.NewInspector(store).Remove(ctx, q, m)
			return err
		},
	}
	if o.gate != nil {
		o.gate(&gateOpts, store)
	}
	g, err := proxy.NewGate(context.Background(), gateOpts)
	if err != nil {
		t.Fatal(err)
	}
	var upstream http.Handler
	if o.upstream != nil {
		upstream, err = proxy.NewHandler(proxy.Options{Upstream: o.upstream, Timeout: 10 * time.Second, Log: log, Limits: proxy.DefaultLimits()})
		if err != nil {
			t.Fatal(err)
		}
	}
	calls := &recorder{queue: name, places: places}
	var clientIP *clientip.Resolver
	if o.behindProxy {
		if clientIP, err = clientip.New([]string{"127.0.0.0/8"}); err != nil {
			t.Fatal(err)
		}
	}
	if o.trusted != nil {
		if clientIP, err = clientip.New(o.trusted); err != nil {
			t.Fatal(err)
		}
	}
	movesCtx, stopMoves := context.WithCancel(context.Background())
	movesDone := make(chan struct{})
	go func() { defer close(movesDone); moves.Run(movesCtx, log) }()
	t.Cleanup(func() { stopMoves(); <-movesDone })
	handoffs := handoff.New(rdb, store, moves, 5*time.Second)
	if err := handoffs.SetPublicURL("http://waitroom.test"); err != nil { // the QR codes' links
		t.Fatal(err)
	}
	apiOpts := httpapi.Options{
		Handoffs: handoffs,
		ClientIP: clientIP,
		Gate:     g,
		Upstream: upstream,
		Store:    store,
		Redis:    rdb,
		Places:   places,
		Passes:   passes,
		Join:     join,
		// The tests talk plain http to 127.0.0.1, where a browser drops a
		// Secure cookie: the local-development setting.
		CookieSecure: false,
		AdminToken:   adminToken,
		TargetURL:    o.targetURL,
		Logger:       log,
		Static:       static,
	}
	if o.api != nil {
		o.api(&apiOpts)
	}
	var handler http.Handler = httpapi.New(apiOpts)
	srv := httptest.NewServer(calls.wrap(handler))
	// Registered after the scheduler's cleanup, so it runs before it: no
	// request is in flight when the scheduler and Redis client go.
	t.Cleanup(srv.Close)
	host := srv.Listener.Addr().String()
	recorders.Store(host, calls)
	t.Cleanup(func() { recorders.Delete(host) })
	st := &stack{t: t, queue: name, store: store, places: places, url: srv.URL, calls: calls, rdb: rdb}
	if o.twoRooms {
		st.queueB = name + "-b"
	}
	return st
}

// newTrust returns place credentials and entry passes with a fresh secret
// and signing key, as a replica with none configured would have.
func newTrust(t *testing.T) (*place.Credentials, *pass.Passes) {
	t.Helper()
	places, err := place.New(newSecret())
	if err != nil {
		t.Fatal(err)
	}
	pemKey, err := pass.GenerateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pass.ParseKeys(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	passes, err := pass.New(keys, issuer)
	if err != nil {
		t.Fatal(err)
	}
	return places, passes
}

// newSecret returns a random secret of the length HMAC-SHA256 wants.
func newSecret() []byte {
	b := make([]byte, place.MinSecretBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

// joinToken is what a site mints for its signed-in user sub: an HS256 JWT
// with the join secret, aud = the queue, valid for ten minutes.
func (s *stack) joinToken(secret []byte, sub string) string {
	return s.laneJoinToken(secret, sub, "")
}

// laneJoinToken is joinToken for a place in lane (the join token's lane claim;
// "": none).
func (s *stack) laneJoinToken(secret []byte, sub, lane string) string {
	s.t.Helper()
	now := time.Now()
	claims := jwt.MapClaims{"sub": sub, "aud": s.queue, "iat": now.Add(-time.Second).Unix(), "exp": now.Add(10 * time.Minute).Unix()}
	if lane != "" {
		claims["lane"] = lane
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// queueName is a fresh queue per test, so tests share Redis without
// flushing it and can run in parallel.
func queueName(t *testing.T) string {
	base := unsafeChars.ReplaceAllString(strings.TrimPrefix(t.Name(), "Test"), "-")
	if len(base) > 40 {
		base = base[:40]
	}
	return fmt.Sprintf("e2e-%s-%d", base, time.Now().UnixNano())
}

// fillWaiting enters users through the store until n of them wait in line,
// so the tokens of the current interval are used up first.
func (s *stack) fillWaiting(prefix string, n int) {
	s.t.Helper()
	ctx := context.Background()
	for i, waiting := 0, 0; waiting < n; i++ {
		if i > n+1000 {
			s.t.Fatalf("fillWaiting: still only %d waiting after %d enters", waiting, i)
		}
		tk, err := s.store.Enter(ctx, s.queue, queue.Entry{Caller: queue.Caller{User: fmt.Sprintf("%s-%d", prefix, i)}})
		if err != nil {
			s.t.Fatal(err)
		}
		if tk.Status == queue.Waiting {
			waiting++
		}
	}
}

// enterRequests counts the enter requests the pages made: a page that
// holds a place must never make a second one. An enter the browser
// dropped before its answer (a load the network changed under, which
// navigate loads again: TestTurnWithoutTargetSaysGoBack counted two) is
// not the page's doing and is not counted.
func (s *stack) enterRequests() int {
	return s.calls.count(func(c call) bool {
		return c.method == http.MethodPost && strings.HasSuffix(c.path, "/enter") && !c.dropped
	})
}

// statusCalls counts the status requests that proved member's place.
func (s *stack) statusCalls(member string) int {
	return s.calls.count(func(c call) bool {
		return c.method == http.MethodGet && strings.HasSuffix(c.path, "/status") && c.member == member
	})
}

func (s *stack) status(member string) queue.Ticket {
	s.t.Helper()
	tk, err := s.store.Status(context.Background(), s.queue, queue.Caller{User: member})
	if err != nil {
		s.t.Fatal(err)
	}
	return tk
}

// member is the member id whose place b's cookie for the queue proves; the
// test fails when b holds no valid one.
func (s *stack) member(b *browser) string {
	s.t.Helper()
	c := b.cookie(s.url, place.CookieName(s.queue, false))
	if c == nil {
		b.fail("no %s cookie in the browser", place.CookieName(s.queue, false))
	}
	m, _, err := s.places.Verify(s.queue, c.Value)
	if err != nil {
		b.fail("the browser's %s cookie: %v", c.Name, err)
	}
	return m
}

// verifyAnswer is what GET /api/v1/verify says about a pass.
type verifyAnswer struct {
	Status int
	Queue  string `json:"queue"`
	Sub    string `json:"sub"`
	Exp    int64  `json:"exp"`
}

// verify asks the server about an entry pass for queue, as an order page's
// server does.
func verify(ctx context.Context, waitroomURL, queue, token string) (verifyAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, waitroomURL+"/api/v1/verify?queue="+url.QueryEscape(queue), nil)
	if err != nil {
		return verifyAnswer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return verifyAnswer{}, err
	}
	defer resp.Body.Close()
	a := verifyAnswer{Status: resp.StatusCode}
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			return a, err
		}
	}
	return a, nil
}

func (s *stack) verify(token string) verifyAnswer {
	s.t.Helper()
	a, err := verify(context.Background(), s.url, s.queue, token)
	if err != nil {
		s.t.Fatal(err)
	}
	return a
}

// fate says where user's place stands, read from Redis without being a
// poll (a status call is one: it would confirm a place held at the head):
// "entered", "waiting", the reason it ended ("abandoned", …), or "".
func (s *stack) fate(user string) string {
	s.t.Helper()
	ctx, q := context.Background(), s.queue
	if _, err := s.rdb.ZScore(ctx, rediskeys.Entered(q), user).Result(); err == nil {
		return "entered"
	}
	if _, err := s.rdb.ZScore(ctx, rediskeys.Waiting(q), user).Result(); err == nil {
		return "waiting"
	}
	if _, err := s.rdb.ZScore(ctx, rediskeys.Held(q), user).Result(); err == nil {
		return "held" // set aside at the head until it confirms (tick.lua)
	}
	for _, r := range []string{queue.ReasonAbandoned, queue.ReasonLeft, queue.ReasonExpired, queue.ReasonRemoved, queue.ReasonDone} {
		if _, err := s.rdb.ZScore(ctx, rediskeys.Gone(q), r+":"+user).Result(); err == nil {
			return r
		}
	}
	return ""
}

// remove takes member out of the line and ends their admission through the
// admin API, as an operator does.
func (s *stack) remove(member string) {
	s.t.Helper()
	u := s.url + "/admin/v1/queues/" + url.PathEscape(s.queue) + "/users/" + url.PathEscape(member)
	req, err := http.NewRequest(http.MethodDelete, u, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		s.t.Fatalf("admin removal of %s: %s", member, resp.Status)
	}
}

// call is one request the browser made to the server.
type call struct {
	method string
	path   string
	// member is the place the request proved with its place cookie, or for
	// a request that proved none, the one its answer's cookie names (a
	// fresh enter); "" when neither.
	member  string
	status  int
	started time.Time // when the request arrived
	at      time.Time // when the answer was written
	// dropped: the client had gone when the answer was done (its context
	// canceled), e.g. Chromium dropping the requests of a load the
	// network changed under, which it then loads again.
	dropped bool
}

// recorder keeps every request the server answered, so a test can check
// which API calls the pages made (and how they were answered).
type recorder struct {
	queue  string
	places *place.Credentials

	mu       sync.Mutex
	calls    []call
	arrivals []arrival
}

// arrival is a request as it reached the server, before its answer.
type arrival struct {
	method, path string
	at           time.Time
}

// recorders are the running stacks' recorders by the host:port they
// serve, so a browser can ask whether a request it sent ever arrived.
var recorders sync.Map

// arrived reports whether a request for method and path reached the
// server at or after since.
func (r *recorder) arrived(method, path string, since time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.arrivals) - 1; i >= 0; i-- {
		a := r.arrivals[i]
		if a.at.Before(since) {
			return false
		}
		if a.method == method && a.path == path {
			return true
		}
	}
	return false
}

func (r *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		started := time.Now()
		r.mu.Lock()
		r.arrivals = append(r.arrivals, arrival{method: req.Method, path: req.URL.Path, at: started})
		r.mu.Unlock()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		member := ""
		if c, err := req.Cookie(place.CookieName(r.queue, false)); err == nil {
			member, _, _ = r.places.Verify(r.queue, c.Value)
		}
		next.ServeHTTP(sw, req)
		if member == "" {
			for _, line := range sw.Header().Values("Set-Cookie") {
				if c, err := http.ParseSetCookie(line); err == nil && c.Name == place.CookieName(r.queue, false) {
					member, _, _ = r.places.Verify(r.queue, c.Value)
				}
			}
		}
		r.mu.Lock()
		r.calls = append(r.calls, call{method: req.Method, path: req.URL.Path, member: member, status: sw.status, started: started, at: time.Now(),
			dropped: req.Context().Err() != nil})
		r.mu.Unlock()
	})
}

// matching returns the recorded calls that match, in the order answered.
func (r *recorder) matching(match func(call) bool) []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []call
	for _, c := range r.calls {
		if match(c) {
			out = append(out, c)
		}
	}
	return out
}

// count returns how many recorded calls match.
func (r *recorder) count(match func(call) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if match(c) {
			n++
		}
	}
	return n
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
