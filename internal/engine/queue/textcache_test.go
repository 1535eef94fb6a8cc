package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// Many page loads at once while the text is not in memory read it once.
func TestTextCacheOneRead(t *testing.T) {
	c := newTextCache(time.Hour)
	var reads atomic.Int64
	release := make(chan struct{})
	read := func(ctx context.Context, q string) (Text, error) {
		reads.Add(1)
		<-release // held until the callers have come: they share this read or its result
		return Text{Title: map[string]string{"en": q}}, nil
	}
	const callers = 64
	var started, done sync.WaitGroup
	started.Add(callers)
	done.Add(callers)
	for range callers {
		go func() {
			defer done.Done()
			started.Done()
			text, err := c.get(context.Background(), "trains", read)
			if err != nil || text.Title["en"] != "trains" {
				t.Errorf("get: %v %v", text, err)
			}
		}()
	}
	started.Wait()
	// The first read holds the entry: callers that come later wait on it.
	wait.For(t, 10*time.Second, "the first read to be under way", func() (bool, string) {
		return c.waiting("trains"), "no read under way"
	})
	close(release)
	done.Wait()
	if n := reads.Load(); n != 1 {
		t.Errorf("%d reads for %d callers, want 1", n, callers)
	}
	// In memory now: no read.
	if _, err := c.get(context.Background(), "trains", read); err != nil || reads.Load() != 1 {
		t.Errorf("a fresh entry was read again (%d reads, %v)", reads.Load(), err)
	}
	// Forgotten (a change on this replica): read again.
	c.forget("trains", nil)
	if _, err := c.get(context.Background(), "trains", read); err != nil || reads.Load() != 2 {
		t.Errorf("a forgotten entry was not read again (%d reads, %v)", reads.Load(), err)
	}
}

// An entry older than the TTL is read again; a failed read is not kept.
func TestTextCacheExpiryAndErrors(t *testing.T) {
	var reads atomic.Int64
	fail := errors.New("redis away")
	failing := true
	read := func(ctx context.Context, q string) (Text, error) {
		reads.Add(1)
		if failing {
			return Text{}, fail
		}
		return Text{Message: map[string]string{"en": "hello"}}, nil
	}
	c := newTextCache(time.Hour)
	if _, err := c.get(context.Background(), "q", read); !errors.Is(err, fail) {
		t.Fatalf("get = %v, want the read's error", err)
	}
	failing = false
	if text, err := c.get(context.Background(), "q", read); err != nil || text.Message["en"] != "hello" || reads.Load() != 2 {
		t.Errorf("after a failure: %v %v, %d reads; want a new read", text, err, reads.Load())
	}

	stale := newTextCache(0) // every entry is already old
	reads.Store(0)
	for range 3 {
		if _, err := stale.get(context.Background(), "q", read); err != nil {
			t.Fatal(err)
		}
	}
	if n := reads.Load(); n != 3 {
		t.Errorf("%d reads with a TTL of 0, want 3", n)
	}
}

// A caller whose request ends stops waiting; the read goes on for the
// others, unaffected by that caller's context.
func TestTextCacheCallerGone(t *testing.T) {
	c := newTextCache(time.Hour)
	release := make(chan struct{})
	readCtx := make(chan error, 1)
	go func() {
		_, _ = c.get(context.Background(), "q", func(ctx context.Context, q string) (Text, error) {
			<-release
			readCtx <- ctx.Err()
			return Text{Title: map[string]string{"en": "x"}}, nil
		})
	}()
	wait.For(t, 10*time.Second, "the read to be under way", func() (bool, string) {
		return c.waiting("q"), "no read under way"
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.get(ctx, "q", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a gone caller got %v, want context.Canceled", err)
	}
	close(release)
	if err := <-readCtx; err != nil {
		t.Errorf("the read's context: %v", err)
	}
}

// waiting reports whether a read of queue is under way.
func (c *readCache[T]) waiting(queue string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[queue]
	if e == nil {
		return false
	}
	select {
	case <-e.ready:
		return false
	default:
		return true
	}
}

// The waiting page's text through the store: a change on this replica
// shows at once; another replica's memory catches up.
func TestPageText(t *testing.T) {
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Second, SessionTTL: time.Minute})
	other, err := NewStore(rdb, []string{q}, Settings{RefillSize: 1, RefillInterval: time.Second, SessionTTL: time.Minute}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, st := range []*Store{s, other} {
		if text, err := st.PageText(ctx, q); err != nil || len(text.Title) != 0 {
			t.Fatalf("PageText before any text: %v %v", text, err)
		}
	}
	title := map[string]string{"en": "Night trains"}
	if err := NewInspector(s).UpdateSettings(ctx, q, Update{Title: &title}); err != nil {
		t.Fatal(err)
	}
	if text, err := s.PageText(ctx, q); err != nil || text.Title["en"] != "Night trains" {
		t.Errorf("this replica after its change: %v %v", text, err)
	}
	wait.For(t, 10*TextCacheTTL, "the other replica to show the new title", func() (bool, string) {
		text, err := other.PageText(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return text.Title["en"] == "Night trains", fmt.Sprintf("%v", text)
	})
	if _, err := s.PageText(ctx, "no-such-queue"); !errors.Is(err, ErrUnknownQueue) {
		t.Errorf("an unknown queue: %v", err)
	}
}
