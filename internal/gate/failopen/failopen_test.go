package failopen_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/gate/failopen"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// link is the network between a replica and Redis, which can be cut: a
// TCP relay to the real Redis that, while cut, closes what it accepts.
type link struct {
	up atomic.Bool
}

// client returns a client of Redis at addr through a new link, cut.
func newLink(t *testing.T, addr string) (*link, *redis.Client) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	lk := &link{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if !lk.up.Load() {
				c.Close()
				continue
			}
			r, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(r, c); r.Close() }()
			go func() { _, _ = io.Copy(c, r); c.Close() }()
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: l.Addr().String(), MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	t.Cleanup(func() { rdb.Close() })
	return lk, rdb
}

// Requests counted while Redis is away reach the record once it answers,
// every one of them, from several replicas racing, and the metric is told
// of each at once.
func TestCountedThenRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := fmt.Sprintf("fo%d", time.Now().UnixNano())
	live := redistest.Client(t)
	var counted atomic.Int64
	// Two replicas: one whose Redis is away for a while, one that writes.
	lk, cut := newLink(t, live.Options().Addr)
	away, err := failopen.New(cut, 500*time.Millisecond, func(got string) {
		if got == q {
			counted.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	other, err := failopen.New(live, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := other.Read(ctx, q); err != nil || rec.Requests != 0 || !rec.LastAt.IsZero() {
		t.Fatalf("before: %+v %v", rec, err)
	}
	// One each before the race, so the away replica always has some to
	// keep (a flush with nothing to write has nothing to fail).
	away.Passed(q)
	other.Passed(q)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for range 50 {
				away.Passed(q)
				other.Passed(q)
			}
		})
	}
	// Flushes race with the counting; the away replica's all fail.
	for range 5 {
		if err := away.Flush(ctx); err == nil {
			t.Fatal("a flush to a dead Redis succeeded")
		}
		if err := other.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if err := other.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if counted.Load() != 1001 {
		t.Fatalf("metric told of %d, want 1001", counted.Load())
	}
	rec, err := other.Read(ctx, q)
	if err != nil || rec.Requests != 1001 {
		t.Fatalf("with one replica away: %+v %v, want 1001", rec, err)
	}
	lastOther := rec.LastAt

	// Redis back for the away replica: what it kept arrives, once.
	lk.up.Store(true)
	if err := away.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := away.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err = other.Read(ctx, q)
	if err != nil || rec.Requests != 2002 {
		t.Fatalf("after the outage: %+v %v, want 2002", rec, err)
	}
	if rec.LastAt.Before(lastOther) || time.Since(rec.LastAt) > time.Minute {
		t.Fatalf("last at %s (other's %s)", rec.LastAt, lastOther)
	}
}
