package failover

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/config"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/infra/redisconn"
	"github.com/waitroom/waitroom/internal/testkit/envconfig"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/httpapi"
	"github.com/waitroom/waitroom/web"
)

const adminToken = "failover-test-admin-token-0123456789" // config.MinAdminTokenBytes or more

// service is waitroom on one Redis topology: config from the environment
// a deployment would set, the client redisconn builds from its URL, the
// store and the real HTTP API in front.
type service struct {
	t       testing.TB
	store   *queue.Store
	url     string
	http    *http.Client
	timeout time.Duration // the store's request timeout
}

// startService serves queues from the Redis redisURL names, with the
// replica WAIT of waitReplicas (0: off). Rate limits are off (every call
// comes from 127.0.0.1) and places are plain user ids, so that the test
// can name and count them; sessions slide, so a pass check runs renew.lua.
func startService(t testing.TB, redisURL string, queues []string, waitReplicas int) *service {
	t.Helper()
	cfg, err := config.Load(envconfig.Lookup(map[string]string{
		"WAITROOM_REDIS_URL":               redisURL,
		"WAITROOM_QUEUES":                  strings.Join(queues, ","),
		"WAITROOM_REDIS_WAIT_REPLICAS":     strconv.Itoa(waitReplicas),
		"WAITROOM_REQUEST_TIMEOUT":         "2s",
		"WAITROOM_REFILL_SIZE":             "2",
		"WAITROOM_REFILL_INTERVAL":         "1h",
		"WAITROOM_ABANDON_AFTER":           "0s",
		"WAITROOM_SESSION_SLIDING":         "true",
		"WAITROOM_LIMIT_ENTER_PER_CLIENT":  "0",
		"WAITROOM_LIMIT_ENTER_PER_PLACE":   "0",
		"WAITROOM_LIMIT_STATUS_PER_CLIENT": "0",
		"WAITROOM_LIMIT_STATUS_PER_PLACE":  "0",
		"WAITROOM_LIMIT_ENTER_PER_NETWORK": "0",
		"WAITROOM_LIMIT_ENTER_PER_SITE":    "0",
		"WAITROOM_POW_NETWORK_BITS":        "off",
		"WAITROOM_INSECURE_USER_IDS":       "true",
		"WAITROOM_COOKIE_SECURE":           "false",
	}))
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cfg.Redis()
	if err != nil {
		t.Fatal(err)
	}
	rdb := redisconn.New(opts)
	t.Cleanup(func() { rdb.Close() })
	store, err := queue.NewStore(rdb, cfg.Queues, cfg.Defaults, cfg.RequestTimeout,
		queue.WithReplicaWait(queue.ReplicaWait{Replicas: cfg.RedisWaitReplicas, Timeout: cfg.RedisWaitTimeout}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	wait.For(t, 30*time.Second, "seed", func() (bool, string) {
		err := queue.NewInspector(store).Seed(ctx)
		return err == nil, fmt.Sprint(err)
	})

	secret := make([]byte, place.MinSecretBytes)
	_, _ = rand.Read(secret) // never fails (crypto/rand)
	places, err := place.New(secret)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := pass.GenerateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pass.ParseKeys(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	passes, err := pass.New(keys, "https://waitroom.failover.test")
	if err != nil {
		t.Fatal(err)
	}
	g, err := proxy.NewGate(ctx, proxy.GateOptions{Queue: cfg.GateQueue, Passes: passes, Admissions: store, InsecureCookie: true})
	if err != nil {
		t.Fatal(err)
	}
	static, err := fs.Sub(web.Static, "static")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(httpapi.Options{
		Store:           store,
		Redis:           rdb,
		Places:          places,
		Passes:          passes,
		Gate:            g,
		AdminToken:      adminToken,
		InsecureUserIDs: true,
		Static:          static,
		// The outage's 503s are logged at error, one line per request.
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}))
	t.Cleanup(srv.Close)
	return &service{t: t, store: store, url: srv.URL, timeout: cfg.RequestTimeout,
		http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
}

// answer is one HTTP exchange.
type answer struct {
	code    int
	status  queue.Status // of a 200
	took    time.Duration
	at      time.Time // when the answer came
	errText string
}

func (s *service) call(method, path, body string) answer {
	start := time.Now()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if strings.HasPrefix(path, "/admin/") {
		req.Header.Set("Authorization", "Bearer "+adminToken)
	}
	resp, err := s.http.Do(req)
	a := answer{took: time.Since(start), at: time.Now()}
	if err != nil {
		a.errText = err.Error()
		return a
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a.code = resp.StatusCode
	if a.code == http.StatusOK {
		var tk struct {
			Status queue.Status `json:"status"`
		}
		_ = json.Unmarshal(raw, &tk)
		a.status = tk.Status
	} else {
		a.errText = string(bytes.TrimSpace(raw))
	}
	return a
}

func (s *service) enter(q, user string) answer {
	return s.call("POST", "/api/v1/queues/"+q+"/enter", `{"user_id":"`+user+`"}`)
}

func (s *service) status(q, user string) answer {
	return s.call("GET", "/api/v1/queues/"+q+"/status?user_id="+url.QueryEscape(user), "")
}

// checkScripts runs every script of the store on queue q, and the admin
// update, and checks their outcomes exactly. q must be fresh.
func (s *service) checkScripts(q string) {
	t := s.t
	t.Helper()
	ctx := context.Background()
	// enter (HTTP): the refill size of 2 admits a and b at once.
	for i, u := range []string{"a", "b", "c", "d"} {
		a := s.enter(q, u)
		want := map[bool]queue.Status{true: queue.Entered, false: queue.Waiting}[i < 2]
		if a.code != http.StatusOK || a.status != want {
			t.Fatalf("%s: enter %s: %d %s %s, want %s", q, u, a.code, a.status, a.errText, want)
		}
	}
	// status (HTTP).
	if a := s.status(q, "d"); a.code != http.StatusOK || a.status != queue.Waiting {
		t.Fatalf("%s: status d: %+v", q, a)
	}
	// admin update (HTTP PATCH, audited).
	if a := s.call("PATCH", "/admin/v1/queues/"+q, `{"refill_size":3}`); a.code != http.StatusOK {
		t.Fatalf("%s: admin update: %+v", q, a)
	}
	// leave.
	if err := s.store.Leave(ctx, q, queue.Caller{User: "c"}); err != nil {
		t.Fatalf("%s: leave: %v", q, err)
	}
	// renew (a sliding session's pass check) and done.
	tk, err := s.store.Status(ctx, q, queue.Caller{User: "a"})
	if err != nil || tk.Status != queue.Entered {
		t.Fatalf("%s: status a: %+v %v", q, tk, err)
	}
	if ok, err := s.store.Current(ctx, q, "a", tk.AdmittedAt); err != nil || !ok {
		t.Fatalf("%s: renew: %v %v", q, ok, err)
	}
	if ok, err := s.store.Done(ctx, q, "a", tk.AdmittedAt); err != nil || !ok {
		t.Fatalf("%s: done: %v %v", q, ok, err)
	}
	// tick: the new refill size of 3 admits d, the one left waiting.
	res, err := s.store.Tick(ctx, q)
	if err != nil || !res.Applied || res.Moved != 1 || res.Waiting != 0 {
		t.Fatalf("%s: tick: %+v %v", q, res, err)
	}
	// info.
	info, err := s.store.Info(ctx, q)
	if err != nil || info.Entered != 2 || info.Waiting != 0 || info.Settings.RefillSize != 3 {
		t.Fatalf("%s: info: %+v %v", q, info, err)
	}
}

// load is enters of new users (and statuses of users already in line)
// to one queue from several workers, recording every answer.
type load struct {
	s     *service
	queue string
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
	n     atomic.Int64

	mu      sync.Mutex
	answers []answer
	acked   []string // users whose enter was answered 200
	bad     []string // answers neither 200 nor 503, or late
}

// startLoad runs workers enter loops against q, each user entering once.
func startLoad(s *service, q, prefix string, workers int) *load {
	l := &load{s: s, queue: q, stop: make(chan struct{})}
	for w := range workers {
		l.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				user := fmt.Sprintf("%s-%d-%d", prefix, w, i)
				a := s.enter(q, user)
				l.record(a, user, true)
				if i%4 == 3 {
					// A status for a place acknowledged just before.
					l.record(s.status(q, user), user, false)
				}
			}
		})
	}
	return l
}

func (l *load) record(a answer, user string, enter bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.answers = append(l.answers, a)
	switch {
	case a.code != http.StatusOK && a.code != http.StatusServiceUnavailable:
		l.bad = append(l.bad, fmt.Sprintf("%s: %d %s", user, a.code, a.errText))
	case a.took > l.s.timeout+time.Second:
		l.bad = append(l.bad, fmt.Sprintf("%s: answered after %s", user, a.took))
	case enter && a.code == http.StatusOK:
		l.acked = append(l.acked, user)
	}
}

// failures returns the answers other than 200 since from, and the last
// of them.
func (l *load) failuresSince(from time.Time) (n int, last time.Time, okAfter int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.answers {
		if a.at.Before(from) {
			continue
		}
		if a.code != http.StatusOK {
			n++
			if a.at.After(last) {
				last = a.at
			}
		}
	}
	for _, a := range l.answers {
		if a.code == http.StatusOK && a.at.After(last) && !a.at.Before(from) {
			okAfter++
		}
	}
	return n, last, okAfter
}

func (l *load) end() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// outage is what one killed primary did to the service.
type outage struct {
	failures  int           // answers other than 200 after the kill
	lastFail  time.Duration // after the kill: the end of the outage
	firstOK   time.Duration // after the kill: the first 200 after the last failure
	acked     int           // enters answered 200 over the whole run
	lost      int           // of them, places the failover lost
	shortfall uint64        // enters answered without the replicas' WAIT
	// shortBefore of them were answered before the kill: only those may
	// be lost under WAIT (the rest went to the promoted replica, which
	// has no replica of its own to wait for).
	shortBefore uint64
	maxTook     time.Duration
}

// recoveryBound is how long the service may take to answer 200s again
// after a primary dies; generous for a shared machine under -race.
const recoveryBound = 30 * time.Second

// killUnderLoad runs enters and statuses on q, kills victim after a
// second of clean load, waits until the service has answered only 200s
// for a second, then counts the acknowledged places that are gone.
func killUnderLoad(t *testing.T, s *service, q, prefix string, victim *node) outage {
	t.Helper()
	l := startLoad(s, q, prefix, 8)
	defer l.end()
	time.Sleep(time.Second) // clean load before the fault: nothing to poll for
	if n, _, _ := l.failuresSince(time.Time{}); n > 0 {
		t.Fatalf("%d failures before the fault: %v", n, l.bad)
	}
	var o outage
	o.shortBefore = s.store.ReplicaWaitShortfalls()
	killed := time.Now()
	victim.kill(t)
	wait.For(t, recoveryBound, "recovery", func() (bool, string) {
		n, last, okAfter := l.failuresSince(killed)
		return n > 0 && okAfter >= 50 && time.Since(last) > time.Second,
			fmt.Sprintf("%d failures, last %s ago, %d ok after", n, time.Since(last).Round(time.Millisecond), okAfter)
	})
	l.end()

	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.bad) > 0 {
		t.Errorf("%d answers neither 200 nor 503 within the request timeout, e.g. %q", len(l.bad), l.bad[:min(5, len(l.bad))])
	}
	var last time.Time
	for _, a := range l.answers {
		o.maxTook = max(o.maxTook, a.took)
		if a.code != http.StatusOK && a.at.After(killed) {
			o.failures++
			if a.at.After(last) {
				last = a.at
			}
		}
	}
	o.lastFail = last.Sub(killed)
	first := time.Time{}
	for _, a := range l.answers {
		if a.code == http.StatusOK && a.at.After(last) && (first.IsZero() || a.at.Before(first)) {
			first = a.at
		}
	}
	o.firstOK = first.Sub(killed)
	o.acked = len(l.acked)
	o.lost = countLost(t, s, q, l.acked)
	o.shortfall = s.store.ReplicaWaitShortfalls()
	return o
}

// countLost asks the store where each acknowledged user stands: one no
// longer waiting nor admitted lost the place in the failover (nothing
// else ends a place here: no tick runs and abandonment is off).
func countLost(t *testing.T, s *service, q string, users []string) int {
	t.Helper()
	ctx := context.Background()
	var lost atomic.Int64
	var wg sync.WaitGroup
	work := make(chan string)
	for range 16 {
		wg.Go(func() {
			for u := range work {
				tk, err := s.store.Status(ctx, q, queue.Caller{User: u})
				if err != nil {
					t.Errorf("status %s: %v", u, err)
					continue
				}
				if tk.Status != queue.Waiting && tk.Status != queue.Entered {
					lost.Add(1)
				}
			}
		})
	}
	for _, u := range users {
		work <- u
	}
	close(work)
	wg.Wait()
	return int(lost.Load())
}

// checkWait fails the test when WAIT was on and a place it covered was
// lost: only an enter answered short of the WAIT before the kill may be.
func (o outage) checkWait(t *testing.T, wait int) {
	t.Helper()
	if wait > 0 && uint64(o.lost) > o.shortBefore {
		t.Errorf("WAIT %d: %d acknowledged places lost, %d of them acknowledged by a replica", wait, o.lost, uint64(o.lost)-o.shortBefore)
	}
}

func (o outage) String() string {
	return fmt.Sprintf("%d acknowledged enters, %d places lost; %d answers not 200 (503) until %s after the kill, first 200 after them at %s; slowest answer %s; %d enters answered short of the WAIT (%d before the kill)",
		o.acked, o.lost, o.failures, o.lastFail.Round(time.Millisecond), o.firstOK.Round(time.Millisecond), o.maxTook.Round(time.Millisecond), o.shortfall, o.shortBefore)
}
