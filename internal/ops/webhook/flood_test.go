package webhook_test

import (
	"github.com/waitroom/waitroom/internal/engine/queue"

	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/ops/webhook"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// TestAdmittedAheadOfLeaveFlood: 300 enter+leave cycles,
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

	site := newFloodSite(t)
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(site.release) }) // before srv.Close: no handler waits

	var obs countObserver
	opts := fast(s, q, srv.URL, "flood", nil)
	opts.Timeout, opts.Parallel, opts.BulkMax, opts.Observer = time.Minute, parallel, bulkMax, &obs
	hooks, err := webhook.New(rdb, opts)
	if err != nil {
		t.Fatal(err)
	}
	stop := hooks.Start(ctx)
	t.Cleanup(stop)
	wait.For(t, 10*time.Second, "the webhooks flag", func() (bool, string) {
		return rdb.HGet(ctx, rediskeys.Config(q), "webhooks").Val() == "1", ""
	})

	// "first" takes the interval's one token; "holder" waits behind it.
	for _, u := range []string{"first", "holder"} {
		if _, err := s.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: u}}); err != nil {
			t.Fatal(err)
		}
	}
	wait.For(t, 10*time.Second, "first's admitted event", func() (bool, string) {
		_, ok := site.admittedAfter("first")
		return ok, ""
	})
	for i := range cycles {
		u := fmt.Sprintf("c%03d", i)
		if _, err := s.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: u}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Leave(ctx, q, queue.Caller{User: u}); err != nil {
			t.Fatal(err)
		}
	}
	rdb.HDel(ctx, rediskeys.Tick(q), "next_at_ms")
	if res, err := s.Tick(ctx, q); err != nil || res.Moved != 1 {
		t.Fatalf("tick %+v, %v: want holder admitted", res, err)
	}

	// One left delivery at a time, until holder's admitted event comes.
	for given := 0; ; given++ {
		if n, ok := site.admittedAfter("holder"); ok {
			t.Logf("holder's admitted event came after %d left deliveries, with %d left events written", n, bulkMax)
			if n > parallel {
				t.Fatalf("the admitted event came after %d left deliveries, want at most %d", n, parallel)
			}
			break
		}
		if given > parallel {
			t.Fatalf("no admitted event after %d left deliveries (at most %d may go first)", given, parallel)
		}
		site.permits <- struct{}{}
		wait.For(t, 10*time.Second, "a left delivery, or the admitted event", func() (bool, string) {
			_, ok := site.admittedAfter("holder")
			return ok || site.leftDeliveries() > given, ""
		})
	}

	// The rest of the backlog, then the count.
	close(site.permits)
	wait.For(t, 30*time.Second, "every left event delivered or counted as dropped", func() (bool, string) {
		return site.leftUsers()+obs.get("dropped:"+webhook.DropBulkFull) >= cycles, ""
	})
	if got, dropped := site.leftUsers(), obs.get("dropped:"+webhook.DropBulkFull); got != bulkMax || got+dropped != cycles {
		t.Errorf("left events: %d delivered, %d dropped; want %d (the bulk cap) and %d in all", got, dropped, bulkMax, cycles)
	}
	if n := obs.get("dropped:" + webhook.DropOutboxFull); n != 0 {
		t.Errorf("%d events dropped from the events outbox", n)
	}
}

// floodSite is a receiver that answers a delivery of left events only
// when given a permit (or once released), and notes, for each admitted
// user, how many left deliveries it had answered before.
type floodSite struct {
	t                *testing.T
	permits, release chan struct{}

	mu       sync.Mutex
	left     map[string]int // sub -> deliveries
	lefts    int            // left deliveries answered
	admitted map[string]int // sub -> lefts answered before it came
}

func newFloodSite(t *testing.T) *floodSite {
	return &floodSite{
		t: t, permits: make(chan struct{}), release: make(chan struct{}),
		left: map[string]int{}, admitted: map[string]int{},
	}
}

func (f *floodSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), webhook.Tolerance) != nil {
		f.t.Errorf("a delivery not signed")
	}
	var b webhook.Body
	if err := json.Unmarshal(body, &b); err != nil || len(b.Events) == 0 {
		f.t.Errorf("body %s: %v", body, err)
		return
	}
	isLeft := b.Events[0].Type == "left"
	if isLeft {
		select { // a left delivery waits for the test's word
		case <-f.permits:
		case <-f.release:
		case <-r.Context().Done():
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range b.Events {
		switch e.Type {
		case "left":
			f.left[e.Sub]++
		case "admitted":
			f.admitted[e.Sub] = f.lefts
		}
	}
	if isLeft {
		f.lefts++
	}
	w.WriteHeader(http.StatusNoContent)
}

func (f *floodSite) admittedAfter(sub string) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.admitted[sub]
	return n, ok
}

func (f *floodSite) leftDeliveries() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lefts
}

func (f *floodSite) leftUsers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.left)
}
