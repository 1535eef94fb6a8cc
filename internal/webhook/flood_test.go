package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/webhook"
)

// TestAdmittedAheadOfLeaveFlood (issue 26.11): 300 enter+leave cycles,
// then an admission. The receiver answers a delivery of left events only
// when the test lets it, one at a time, so the bulk backlog drains no
// faster than the test says. The admitted event arrives after at most
// Parallel left deliveries, however long the backlog (before, one
// outbox in order: after all 300); the bulk outbox holds BulkMax
// entries, and every other left event is counted as dropped: delivered +
// dropped = 300, exactly.
func TestAdmittedAheadOfLeaveFlood(t *testing.T) {
	const (
		cycles   = 300
		bulkMax  = 100
		parallel = 4
	)
	ctx := context.Background()
	s, q, rdb := newQueue(t, 1)

	var (
		mu       sync.Mutex
		left     = map[string]int{} // sub -> deliveries
		lefts    int                // left deliveries answered
		admitted = map[string]int{} // sub -> lefts answered before it came
		permits  = make(chan struct{})
		release  = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), webhook.Tolerance) != nil {
			t.Errorf("a delivery not signed")
		}
		var b webhook.Body
		if err := json.Unmarshal(body, &b); err != nil || len(b.Events) == 0 {
			t.Errorf("body %s: %v", body, err)
			return
		}
		if b.Events[0].Type == "left" {
			select { // a left delivery waits for the test's word
			case <-permits:
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range b.Events {
			switch e.Type {
			case "left":
				left[e.Sub]++
			case "admitted":
				admitted[e.Sub] = lefts
			}
		}
		if b.Events[0].Type == "left" {
			lefts++
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before srv.Close: no handler waits

	var obs countObserver
	opts := fast(q, srv.URL, "flood", nil)
	opts.Timeout, opts.Parallel, opts.BulkMax, opts.Observer = time.Minute, parallel, bulkMax, &obs
	hooks, err := webhook.New(rdb, opts)
	if err != nil {
		t.Fatal(err)
	}
	stop := hooks.Start(ctx)
	t.Cleanup(stop)
	waitFor(t, 10*time.Second, "the webhooks flag", func() bool {
		return rdb.HGet(ctx, queue.ConfigKey(q), "webhooks").Val() == "1"
	})

	// "first" takes the interval's one token; "holder" waits behind it.
	for _, u := range []string{"first", "holder"} {
		if _, err := s.Enter(ctx, q, u); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "first's admitted event", func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := admitted["first"]
		return ok
	})
	for i := range cycles {
		u := fmt.Sprintf("c%03d", i)
		if _, err := s.Enter(ctx, q, u); err != nil {
			t.Fatal(err)
		}
		if err := s.Leave(ctx, q, u); err != nil {
			t.Fatal(err)
		}
	}
	rdb.HDel(ctx, queue.KeyPrefix(q)+"tick", "next_at_ms")
	if res, err := s.Tick(ctx, q); err != nil || res.Moved != 1 {
		t.Fatalf("tick %+v, %v: want holder admitted", res, err)
	}

	// One left delivery at a time, until holder's admitted event comes.
	for given := 0; ; given++ {
		mu.Lock()
		n, ok := admitted["holder"]
		mu.Unlock()
		if ok {
			t.Logf("holder's admitted event came after %d left deliveries, with %d left events written", n, bulkMax)
			if n > parallel {
				t.Fatalf("the admitted event came after %d left deliveries, want at most %d", n, parallel)
			}
			break
		}
		if given > parallel {
			t.Fatalf("no admitted event after %d left deliveries (at most %d may go first)", given, parallel)
		}
		permits <- struct{}{}
		waitFor(t, 10*time.Second, "a left delivery, or the admitted event", func() bool {
			mu.Lock()
			defer mu.Unlock()
			_, ok := admitted["holder"]
			return ok || lefts > given
		})
	}

	// The rest of the backlog, then the count.
	close(permits)
	waitFor(t, 30*time.Second, "every left event delivered or counted as dropped", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(left)+obs.get("dropped:"+webhook.DropBulkFull) >= cycles
	})
	mu.Lock()
	defer mu.Unlock()
	if got, dropped := len(left), obs.get("dropped:"+webhook.DropBulkFull); got != bulkMax || got+dropped != cycles {
		t.Errorf("left events: %d delivered, %d dropped; want %d (the bulk cap) and %d in all", got, dropped, bulkMax, cycles)
	}
	if n := obs.get("dropped:" + webhook.DropOutboxFull); n != 0 {
		t.Errorf("%d events dropped from the events outbox", n)
	}
}
