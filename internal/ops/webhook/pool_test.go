package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/redisconn"
	"github.com/waitroom/waitroom/internal/ops/webhook"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// TestManyQueuesLeaveTheRequestPool: 50 queues with
// webhooks, their workers all blocked in XREADGROUP at once on their own
// client (redisconn.NewBlocking, as cmd/waitroom wires them), and a
// request client of 4 connections: an enter in every queue at once all
// succeed, and every queue's admitted event arrives. With the workers on
// the request client (the wiring before), its 4 connections are held by
// 4 blocked reads and the enters time out waiting for the pool.
func TestManyQueuesLeaveTheRequestPool(t *testing.T) {
	const queues = 50
	ctx := context.Background()
	addr := redistest.Addr(t)
	stamp := time.Now().UnixNano()
	names := make([]string, queues)
	for i := range names {
		names[i] = fmt.Sprintf("pool%d-%d", stamp, i)
	}

	requests := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 4, PoolTimeout: 2 * time.Second})
	t.Cleanup(func() { requests.Close() })
	store, err := queue.NewStore(requests, names, queue.Settings{
		RefillSize: 5, RefillInterval: time.Minute, SessionTTL: time.Hour,
	}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu       sync.Mutex
		admitted = map[string]string{} // queue -> sub
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), webhook.Tolerance) != nil {
			t.Errorf("a delivery not signed")
		}
		var b webhook.Body
		if err := json.Unmarshal(body, &b); err != nil {
			t.Errorf("body %s: %v", body, err)
		}
		mu.Lock()
		for _, e := range b.Events {
			if e.Type == "admitted" {
				admitted[e.Queue] = e.Sub
			}
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)

	// The workers block (Poll) again as soon as a read ends, so each holds
	// a connection nearly all the time; stop waits for a read to end.
	opts := webhook.Options{
		Queues: names, Outbox: store, URL: srv.URL, Secret: secret, Consumer: "pool",
		Refresh: time.Minute, Poll: 2 * time.Second, Trim: time.Minute,
	}
	name := fmt.Sprintf("wh-pool-%d", stamp)
	workersRedis := redisconn.NewBlocking(&redis.UniversalOptions{Addrs: []string{addr}, ClientName: name, ContextTimeoutEnabled: true}, opts.Conns())
	t.Cleanup(func() { workersRedis.Close() })
	hooks, err := webhook.New(workersRedis, opts)
	if err != nil {
		t.Fatal(err)
	}
	stop := hooks.Start(ctx)
	t.Cleanup(stop)

	admin := redistest.Client(t)
	wait.For(t, 30*time.Second, "every queue's worker blocked in XREADGROUP", func() (bool, string) {
		return blockedReads(ctx, t, admin, name) == queues, ""
	})

	var wg sync.WaitGroup
	errs := make(chan error, queues)
	for _, q := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := store.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: "u-" + q}}); err != nil {
				errs <- fmt.Errorf("enter %s: %w", q, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	wait.For(t, 30*time.Second, "every queue's admitted event", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(admitted) == queues, ""
	})
	for _, q := range names {
		if admitted[q] != "u-"+q {
			t.Errorf("queue %s: admitted %q", q, admitted[q])
		}
	}
}

// blockedReads counts the connections named name that wait in XREADGROUP.
func blockedReads(ctx context.Context, t *testing.T, admin *redis.Client, name string) int {
	t.Helper()
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " name="+name+" ") && strings.Contains(line, " cmd=xreadgroup ") {
			n++
		}
	}
	return n
}
