package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/ops/webhook"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

var secret = []byte("0123456789abcdef0123456789abcdef-test")

// newQueue returns a store of one queue of the test's own.
func newQueue(t *testing.T, refill int) (*queue.Store, string, *redis.Client) {
	t.Helper()
	rdb := redistest.Client(t)
	name := fmt.Sprintf("wh%d", time.Now().UnixNano())
	s, err := queue.NewStore(rdb, []string{name}, queue.Settings{
		RefillSize: refill, RefillInterval: time.Minute, SessionTTL: time.Hour,
	}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return s, name, rdb
}

// fast are timings that make a test of retries take seconds.
func fast(s *queue.Store, q, url, consumer string, client *http.Client) webhook.Options {
	return webhook.Options{
		Queues: []string{q}, Outbox: s, URL: url, Secret: secret, Consumer: consumer, Client: client,
		Timeout: 300 * time.Millisecond, MinBackoff: 50 * time.Millisecond, MaxBackoff: 400 * time.Millisecond,
		Refresh: 100 * time.Millisecond, Poll: 50 * time.Millisecond, Trim: 200 * time.Millisecond,
	}
}

// tagged is a client whose requests say which replica sent them.
func tagged(name string) *http.Client {
	return &http.Client{Transport: tagTransport(name)}
}

type tagTransport string

func (t tagTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Replica", string(t))
	return http.DefaultTransport.RoundTrip(r)
}

// TestEveryEventArrives: the receiver fails for a while, then recovers;
// meanwhile the replica delivering dies in the middle of a delivery the
// receiver had already handled. Every event arrives, signed (docs/WEBHOOKS.md's
// receiver checks each), and an event that comes twice has the same id.
func TestEveryEventArrives(t *testing.T) {
	ctx := context.Background()
	s, q, rdb := newQueue(t, 5)

	var (
		mu        sync.Mutex
		ids       = map[string]map[string]bool{} // type:sub:reason -> ids
		seen      = map[string]int{}             // id -> deliveries
		failing   atomic.Bool
		failed    atomic.Int64
		killArmed atomic.Bool
		killed    = make(chan struct{})
	)
	failing.Store(true)
	handle := func(body []byte) {
		var b webhook.Body
		if err := json.Unmarshal(body, &b); err != nil {
			t.Errorf("body %s: %v", body, err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range b.Events {
			if e.Queue != q || e.ID == "" || e.Time.IsZero() {
				t.Errorf("event %+v", e)
			}
			k := e.Type + ":" + e.Sub + ":" + e.Reason
			if ids[k] == nil {
				ids[k] = map[string]bool{}
			}
			ids[k][e.ID] = true
			seen[e.ID]++
		}
	}
	verified := receiver(secret, handle)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			failed.Add(1)
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get("X-Replica") == "A" && killArmed.CompareAndSwap(true, false) {
			// Handled here, then replica A dies before it hears the 2xx.
			rec := httptest.NewRecorder()
			verified(rec, r)
			if rec.Code != http.StatusNoContent {
				t.Errorf("receiver refused a delivery: %d", rec.Code)
			}
			close(killed)
			<-r.Context().Done()
			return
		}
		rec := httptest.NewRecorder()
		verified(rec, r)
		if rec.Code != http.StatusNoContent {
			t.Errorf("receiver refused a delivery: %d %s", rec.Code, rec.Body)
		}
		w.WriteHeader(rec.Code)
	}))
	defer srv.Close()

	a, err := webhook.New(rdb, fast(s, q, srv.URL, "A", tagged("A")))
	if err != nil {
		t.Fatal(err)
	}
	stopA := a.Start(ctx)
	defer stopA()
	wait.For(t, 5*time.Second, "the webhooks flag", func() (bool, string) {
		return rdb.HGet(ctx, rediskeys.Config(q), "webhooks").Val() == "1", ""
	})

	// 20 users: 5 admitted at once, 15 by three ticks; then done, left,
	// removed and a settings change.
	want := map[string]bool{}
	for i := range 20 {
		u := fmt.Sprintf("u%02d", i)
		if _, err := s.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: u}}); err != nil {
			t.Fatal(err)
		}
		want["admitted:"+u+":"] = true
	}
	for range 3 {
		rdb.HDel(ctx, rediskeys.Tick(q), "next_at_ms")
		if _, err := s.Tick(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	tk, _ := s.Status(ctx, q, queue.Caller{User: "u00"})
	if ok, err := s.Done(ctx, q, "u00", tk.AdmittedAt); !ok || err != nil {
		t.Fatal("done", ok, err)
	}
	if err := s.Leave(ctx, q, queue.Caller{User: "u01"}); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.NewInspector(s).Remove(ctx, q, "u02"); err != nil {
		t.Fatal(err)
	}
	refill := 7
	if err := queue.NewInspector(s).UpdateSettings(ctx, q, queue.Update{RefillSize: &refill}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"done:u00:", "left:u01:left", "left:u02:removed", "settings_changed::"} {
		want[k] = true
	}

	// Failing: every entry is tried and retried.
	wait.For(t, 10*time.Second, "failed deliveries", func() (bool, string) { return failed.Load() >= 20, "" })
	// Recovered, and A dies in the middle of its next delivery.
	killArmed.Store(true)
	failing.Store(false)
	select {
	case <-killed:
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery from A after the receiver recovered")
	}
	stopA()

	b, err := webhook.New(rdb, fast(s, q, srv.URL, "B", tagged("B")))
	if err != nil {
		t.Fatal(err)
	}
	stopB := b.Start(ctx)
	defer stopB()

	wait.For(t, 30*time.Second, "every event", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		for k := range want {
			if len(ids[k]) == 0 {
				return false, ""
			}
		}
		return true, ""
	})
	wait.For(t, 10*time.Second, "every entry acknowledged", func() (bool, string) {
		p, err := rdb.XPending(ctx, rediskeys.Events(q), webhook.Group).Result()
		return err == nil && p.Count == 0, ""
	})

	mu.Lock()
	defer mu.Unlock()
	dups := 0
	for k, set := range ids {
		if !want[k] {
			t.Errorf("unexpected event %s", k)
		}
		if len(set) != 1 {
			t.Errorf("event %s came with %d different ids: %v", k, len(set), set)
		}
	}
	for _, n := range seen {
		dups += n - 1
	}
	if dups == 0 {
		t.Error("no event came twice: the replica killed mid-delivery did not redeliver")
	}
	t.Logf("%d events, %d deliveries refused while failing, %d events delivered twice", len(want), failed.Load(), dups)
}

// TestDeadLetter: an entry still undelivered after GiveUpAfter is kept in
// the dead letters and acknowledged.
func TestDeadLetter(t *testing.T) {
	ctx := context.Background()
	s, q, rdb := newQueue(t, 5)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "never", http.StatusInternalServerError)
	}))
	defer srv.Close()
	o := fast(s, q, srv.URL, "A", nil)
	o.GiveUpAfter = 500 * time.Millisecond
	var obs countObserver
	o.Observer = &obs
	w, err := webhook.New(rdb, o)
	if err != nil {
		t.Fatal(err)
	}
	stop := w.Start(ctx)
	defer stop()
	wait.For(t, 5*time.Second, "the webhooks flag", func() (bool, string) {
		return rdb.HGet(ctx, rediskeys.Config(q), "webhooks").Val() == "1", ""
	})
	if _, err := s.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: "u1"}}); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 10*time.Second, "a dead letter", func() (bool, string) { return rdb.XLen(ctx, rediskeys.DeadEvents(q)).Val() == 1, "" })
	dead := rdb.XRange(ctx, rediskeys.DeadEvents(q), "-", "+").Val()[0]
	if dead.Values["type"] != "admitted" || dead.Values["subs"] != "u1" || dead.Values["entry"] == "" {
		t.Fatalf("dead letter %v", dead.Values)
	}
	wait.For(t, 5*time.Second, "the entry acknowledged", func() (bool, string) {
		return rdb.XPending(ctx, rediskeys.Events(q), webhook.Group).Val().Count == 0, ""
	})
	if obs.get(webhook.ResultDeadLetter) != 1 || obs.get(webhook.ResultRetry) == 0 {
		t.Fatalf("observed %v", obs.counts())
	}
}

// TestNoURLNoEvents: without a URL (none by default, none of the queue's)
// the worker keeps the flag off, so the scripts write nothing; a queue's
// own webhook_url turns it on.
func TestNoURLNoEvents(t *testing.T) {
	ctx := context.Background()
	s, q, rdb := newQueue(t, 5)
	got := make(chan string, 10)
	srv := httptest.NewServer(receiver(secret, func(b []byte) { got <- string(b) }))
	defer srv.Close()
	w, err := webhook.New(rdb, fast(s, q, "", "A", nil))
	if err != nil {
		t.Fatal(err)
	}
	stop := w.Start(ctx)
	defer stop()
	wait.For(t, 5*time.Second, "the flag off", func() (bool, string) {
		return rdb.HGet(ctx, rediskeys.Config(q), "webhooks").Val() == "0", ""
	})
	if _, err := s.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: "u1"}}); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, rediskeys.Events(q)).Val(); n != 0 {
		t.Fatal("an outbox without a URL")
	}
	own := srv.URL + "/hooks?token=x"
	if err := queue.NewInspector(s).UpdateSettings(ctx, q, queue.Update{WebhookURL: &own}); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 5*time.Second, "the flag on", func() (bool, string) {
		return rdb.HGet(ctx, rediskeys.Config(q), "webhooks").Val() == "1", ""
	})
	if _, err := s.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: "u2"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if !strings.Contains(b, `"sub":"u2"`) || strings.Contains(b, "u1") {
			t.Fatalf("delivered %s", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing delivered to the queue's own URL")
	}
}

type countObserver struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *countObserver) WebhookDelivered(_, result string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[string]int{}
	}
	o.n[result]++
}

func (o *countObserver) WebhookBacklog(string, int64, time.Duration) {}

// WebhookDropped counts drops as "dropped:<reason>".
func (o *countObserver) WebhookDropped(_, reason string, n int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[string]int{}
	}
	o.n["dropped:"+reason] += int(n)
}

func (o *countObserver) get(r string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[r]
}

func (o *countObserver) counts() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.n)
}
