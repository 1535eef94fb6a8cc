package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/config"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/infra/redisconn"
	"github.com/waitroom/waitroom/internal/testkit/envconfig"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// "the gate must not be starved". The gate fails open only
// while Redis is away, never because this process is busy: these stacks
// run in gate mode with WAITROOM_GATE_FAIL=open, a small Redis pool for
// the requests and the gate's ping on a connection of its own, wired as
// main wires them.

// starveStack is a stack in open mode in front of an order site.
type starveStack struct {
	*stack
	rdb   *redis.Client
	pings atomic.Int64 // the gate's pings
	// pass is an admitted place's entry pass; place a waiting place's
	// cookie header, token its live hand-over.
	pass, member string
	place        []string
	token        string
	client       *http.Client
}

// newStarveStack builds the stack on Redis options o: the requests'
// pool, and the gate's Pinger on a connection of its own.
func newStarveStack(t *testing.T, o *redis.UniversalOptions) *starveStack {
	t.Helper()
	return newStarveStackPinging(t, o, o.ReadTimeout)
}

// newStarveStackPinging is newStarveStack whose gate's pings wait
// pingTimeout for Redis to answer.
func newStarveStackPinging(t *testing.T, o *redis.UniversalOptions, pingTimeout time.Duration) *starveStack {
	t.Helper()
	ss := &starveStack{rdb: redisconn.New(o).(*redis.Client)}
	t.Cleanup(func() { ss.rdb.Close() })
	po := *o
	po.ReadTimeout, po.WriteTimeout = pingTimeout, pingTimeout
	pinger := redisconn.NewPinger(&po)
	t.Cleanup(func() { pinger.Close() })
	order := orderSite(t)
	up, _ := url.Parse(order.URL)
	ss.stack = newStack(t, stackOptions{
		settings: queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour},
		redis:    ss.rdb,
		upstream: up,
		gate: func(g *proxy.GateOptions, _ *queue.Store) {
			g.Fail = gate.FailOpen
			g.Ping = func(ctx context.Context) error {
				ss.pings.Add(1)
				return pinger.Ping(ctx)
			}
		},
	})
	ss.client = &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	t.Cleanup(ss.client.CloseIdleConnections)
	// The first place is admitted (the bucket's one token), a later one
	// waits, with a hand-over for its QR code. The scheduler's first tick
	// refills the bucket once, whenever a loaded machine runs it, and
	// moves the head of the line in: so the queue is paused once the
	// first place is in (a pass holder for the tests), and the place made
	// after it waits whenever that tick comes.
	var tk struct {
		UserID     string `json:"user_id"`
		Status     string `json:"status"`
		Pass       string `json:"pass"`
		PlaceToken string `json:"place_token"`
	}
	ss.api("POST", "/enter", "{}", nil, &tk)
	if tk.Status != "ENTERED" {
		t.Fatalf("first enter: %+v", tk)
	}
	ss.pass, ss.member = tk.Pass, tk.UserID
	paused := true
	ss.update(queue.Update{Paused: &paused})
	ss.api("POST", "/enter", "{}", nil, &tk)
	if tk.Status != "WAITING" {
		t.Fatalf("an enter while paused: %+v", tk)
	}
	ss.place = []string{"Authorization", "Bearer " + tk.PlaceToken}
	var h struct {
		Token string `json:"token"`
	}
	ss.api("POST", "/handoff", "", ss.place, &h)
	ss.token = h.Token
	if h.Token == "" {
		t.Fatalf("hand-over %+v", h)
	}
	return ss
}

// redisOptions are the service's Redis options (config.Redis) for addr, with a
// pool of size conns that gives up after poolTimeout.
func redisOptions(t *testing.T, addr string, conns int, poolTimeout time.Duration) *redis.UniversalOptions {
	t.Helper()
	cfg, err := config.Load(envconfig.Lookup(map[string]string{"WAITROOM_REDIS_URL": "redis://" + addr}))
	if err != nil {
		t.Fatal(err)
	}
	o, err := cfg.Redis()
	if err != nil {
		t.Fatal(err)
	}
	o.PoolSize, o.PoolTimeout = conns, poolTimeout
	return o
}

// api calls the queue's API to set the stack up and decodes the answer
// into v. A 503 is asked again: the pool is small on purpose (one
// connection, 100 ms) and the stack's background work (the scheduler,
// the hand-over tracker) shares it, so on a loaded
// machine a setup call may time out waiting for it ("connection pool
// timeout"), which is what the tests go on to provoke, not what they set
// up with. A call that timed out in the pool never reached Redis.
func (ss *starveStack) api(method, path, body string, header []string, v any) {
	ss.t.Helper()
	var r answer
	wait.For(ss.t, time.Minute, method+" "+path+" answered other than 503", func() (bool, string) {
		r = ss.send(method, "/api/v1/queues/"+ss.queue+path, body, header)
		return r.status != http.StatusServiceUnavailable, fmt.Sprintf("%d %s", r.status, r.body)
	})
	if r.status >= 300 || json.Unmarshal([]byte(r.body), v) != nil {
		ss.t.Fatalf("%s %s: %d %s", method, path, r.status, r.body)
	}
}

// send makes one request; status 0 when it failed.
func (ss *starveStack) send(method, path, body string, header []string) answer {
	req, err := http.NewRequest(method, ss.url+path, strings.NewReader(body))
	if err != nil {
		ss.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := ss.client.Do(req)
	if err != nil {
		return answer{body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// order asks for the order page as a browser with pass ("" none) and
// names the outcome: "order:<sub>" (reached it), "waiting" (sent to the
// waiting room), or the status.
func (ss *starveStack) order(pass string) string {
	var h []string
	if pass != "" {
		h = []string{"Cookie", gate.CookieName(ss.queue, false) + "=" + pass}
	}
	a := ss.send("GET", "/order", "", append(h, "Accept", "text/html"))
	switch {
	case a.status == 200 && strings.HasPrefix(a.body, "order:"):
		return a.body
	case a.status == http.StatusSeeOther && strings.HasPrefix(a.header.Get("Location"), "/q/"+ss.queue):
		return "waiting"
	}
	return fmt.Sprint(a.status)
}

// flood runs workers goroutines sending what req makes until stop
// closes; it returns the count of answers by status.
func (ss *starveStack) flood(workers int, stop <-chan struct{}, req func(i int) (method, path, body string, header []string)) func() map[int]int {
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; ; i += workers {
				select {
				case <-stop:
					return
				default:
				}
				m, p, b, h := req(i)
				a := ss.send(m, p, b, h)
				mu.Lock()
				counts[a.status]++
				mu.Unlock()
			}
		})
	}
	return func() map[int]int {
		wg.Wait()
		return counts
	}
}

// watch asks for the order page without a pass, and with the admitted
// place's pass, until done says the run proved enough (or a minute
// passes: then it fails): no request without a pass may reach the page.
func (ss *starveStack) watch(t *testing.T, done func() (bool, string)) (passless int, outcomes map[string]int) {
	t.Helper()
	outcomes = map[string]int{}
	deadline := time.Now().Add(time.Minute)
	for {
		got := ss.order("")
		passless++
		outcomes[got]++
		if strings.HasPrefix(got, "order:") {
			t.Errorf("request %d without a pass reached the order page (%s)", passless, got)
		}
		outcomes["with pass: "+ss.order(ss.pass)]++
		if ok, saw := done(); ok && passless >= 20 {
			return passless, outcomes
		} else if time.Now().After(deadline) {
			t.Fatalf("the run proves nothing after a minute: %s; outcomes %v", saw, outcomes)
		}
	}
}

// A QR flood by one place holder (600 connections once starved the
// process until its Redis calls timed out and the gate failed open: 17
// of 40 requests without a pass reached the order page): with WAITROOM_
// GATE_FAIL=open, none does, and the flood cannot use up the requests'
// Redis pool (its pictures are limited without Redis, and drawn once).
//
// The gate's pings wait 5 s, not the service's 1 s: beside a compiler
// on two cores, the test process once went over 2 s without running
// (the ping and its retry both late, with Redis idle), and the gate
// rightly failed open. What the flood itself does to the process shows
// in the pool's timeouts and the QR answers, which stay checked.
func TestOpenGateUnderQRFlood(t *testing.T) {
	t.Parallel()
	ss := newStarveStackPinging(t, redisOptions(t, redistest.Addr(t), 2, time.Second), 5*time.Second)
	stop := make(chan struct{})
	qr := "/api/v1/queues/" + ss.queue + "/handoff/qr?token=" + url.QueryEscape(ss.token)
	counts := ss.flood(48, stop, func(int) (string, string, string, []string) { return "GET", qr, "", ss.place })
	start := ss.pings.Load()
	passless, outcomes := ss.watch(t, func() (bool, string) {
		pings := ss.pings.Load() - start
		return pings >= 3, fmt.Sprintf("%d pings", pings)
	})
	close(stop)
	c := counts()
	stats := ss.rdb.PoolStats()
	t.Logf("QR flood: answers %v; %d requests without a pass: %v; pool %+v", c, passless, outcomes, *stats)
	if c[http.StatusTooManyRequests] == 0 || c[http.StatusOK] == 0 {
		t.Errorf("the flood was not limited: %v", c)
	}
	if stats.Timeouts != 0 {
		t.Errorf("the QR flood used up the Redis pool: %d pool timeouts", stats.Timeouts)
	}
}

// A flood of endpoints that each call Redis (hand-overs made, status
// asked) from one client, with a pool of one connection that gives up
// after 20 ms: the pool really runs out (pool timeouts counted), pass
// checks fail for it, and still no request without a pass reaches the
// order page in open mode, since Redis answers the gate's own ping
// (which waits 5 s, as in TestOpenGateUnderQRFlood).
func TestOpenGateUnderRedisFlood(t *testing.T) {
	t.Parallel()
	ss := newStarveStackPinging(t, redisOptions(t, redistest.Addr(t), 1, 20*time.Millisecond), 5*time.Second)
	stop := make(chan struct{})
	q := "/api/v1/queues/" + ss.queue
	counts := ss.flood(48, stop, func(i int) (string, string, string, []string) {
		if i%2 == 0 {
			return "POST", q + "/handoff", "", ss.place
		}
		return "GET", q + "/status", "", ss.place
	})
	start := ss.pings.Load()
	passless, outcomes := ss.watch(t, func() (bool, string) {
		pings, timeouts := ss.pings.Load()-start, ss.rdb.PoolStats().Timeouts
		// Past the pass's recheck (proxy.Recheck): its checks asked Redis
		// through the exhausted pool.
		return pings >= 2*int64(proxy.Recheck/time.Second)+1 && timeouts >= 20, fmt.Sprintf("%d pings, %d pool timeouts", pings, timeouts)
	})
	close(stop)
	c := counts()
	t.Logf("Redis flood: answers %v; %d requests without a pass: %v; pool %+v", c, passless, outcomes, *ss.rdb.PoolStats())
	if c[http.StatusServiceUnavailable] == 0 {
		t.Errorf("the flood never found the pool used up: %v", c)
	}
}

// A pool timeout never makes Redis away, a paused Redis does: the
// requests' one connection held (a blocking read), pass checks fail with
// go-redis's pool timeout and requests without a pass are still sent to
// the waiting room in open mode; Redis paused (docker pause), the gate's
// own ping fails and open mode lets them through; Redis back, it closes.
func TestPoolTimeoutIsNotRedisAway(t *testing.T) {
	t.Parallel()
	ctr := redistest.NewContainer(t)
	o := redisOptions(t, "redis:6379", 1, 100*time.Millisecond)
	o.Dialer = ctr.Dialer()
	ss := newStarveStack(t, o)

	held := make(chan struct{})
	go func() {
		defer close(held)
		ss.rdb.BLPop(context.Background(), time.Minute, "starve:nothing") // the pool's one connection, until release
	}()
	// A BLPOP does not end when its context does (the client is blocked
	// reading): pushing to its list from another connection ends it.
	waker := ctr.Client(t, &redis.Options{})
	var once sync.Once
	release := func() {
		once.Do(func() { waker.LPush(context.Background(), "starve:nothing", "release") })
	}
	t.Cleanup(func() { release(); <-held })
	start := ss.pings.Load()
	passless, outcomes := ss.watch(t, func() (bool, string) {
		pings, timeouts := ss.pings.Load()-start, ss.rdb.PoolStats().Timeouts
		return pings >= 2*int64(proxy.Recheck/time.Second)+1 && timeouts >= 3, fmt.Sprintf("%d pings, %d pool timeouts", pings, timeouts)
	})
	t.Logf("pool held: %d requests without a pass: %v; pool %+v", passless, outcomes, *ss.rdb.PoolStats())
	release()
	<-held

	if err := ctr.Pause(context.Background()); err != nil {
		t.Fatal(err)
	}
	paused := true
	t.Cleanup(func() {
		if paused {
			_ = ctr.Unpause(context.Background())
		}
	})
	wait.For(t, 30*time.Second, "Redis paused: the open gate to let requests without a pass through", func() (bool, string) {
		got := ss.order("")
		return got == "order:", got
	})
	if err := ctr.Unpause(context.Background()); err != nil {
		t.Fatal(err)
	}
	paused = false
	wait.For(t, 30*time.Second, "Redis back: the gate to close again", func() (bool, string) {
		got := ss.order("")
		return got == "waiting", got
	})
}
