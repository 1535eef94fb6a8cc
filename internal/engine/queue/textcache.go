package queue

import (
	"context"
	"sync"
	"time"
)

// TextCacheTTL is how long a replica serves a queue's title and message
// from memory on the waiting page (PageText). Every page load would
// otherwise read them from Redis; a change made on another replica shows
// within this long, one made on this one at once.
const TextCacheTTL = time.Second

// readCache holds each queue's T (its text, its draw state) as this
// replica last read it. One read at a time per queue: requests that come
// while it is under way wait for it rather than each asking Redis.
type readCache[T any] struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry[T]
	ttl     time.Duration
}

// textCache is the queues' texts (PageText).
type textCache = readCache[Text]

type cacheEntry[T any] struct {
	ready chan struct{} // closed once the read is done; text and err are set then
	text  T
	err   error
	at    time.Time // when the read ended
}

func newTextCache(ttl time.Duration) *textCache { return newReadCache[Text](ttl) }

func newReadCache[T any](ttl time.Duration) *readCache[T] {
	return &readCache[T]{entries: map[string]*cacheEntry[T]{}, ttl: ttl}
}

// get returns queue's text, from memory when this replica read it less
// than ttl ago, else from read.
func (c *readCache[T]) get(ctx context.Context, queue string, read func(context.Context, string) (T, error)) (T, error) {
	c.mu.Lock()
	e := c.entries[queue]
	if e != nil && !e.fresh(c.ttl) {
		e = nil
	}
	if e == nil {
		e = &cacheEntry[T]{ready: make(chan struct{})}
		c.entries[queue] = e
		c.mu.Unlock()
		// Not the request's own context: the others waiting on this read
		// must not fail because this client went away (read has the
		// store's timeout).
		e.text, e.err = read(context.WithoutCancel(ctx), queue)
		e.at = time.Now()
		if e.err != nil {
			c.forget(queue, e) // the next request reads again
		}
		close(e.ready)
		return e.text, e.err
	}
	c.mu.Unlock()
	select {
	case <-e.ready:
		return e.text, e.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// fresh reports whether e is still being read or was read within ttl
// (called with the cache's lock held).
func (e *cacheEntry[T]) fresh(ttl time.Duration) bool {
	select {
	case <-e.ready:
		return time.Since(e.at) < ttl
	default:
		return true
	}
}

// forget drops queue's entry (only e, when e is given, so a failed old
// read never drops a newer one): the next request reads from Redis.
func (c *readCache[T]) forget(queue string, e *cacheEntry[T]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e == nil || c.entries[queue] == e {
		delete(c.entries, queue)
	}
}

// PageText is Text for the waiting page: read from Redis at most once per
// TextCacheTTL per queue on this replica. The maps are shared between
// callers: read them, never change them.
func (s *Store) PageText(ctx context.Context, queue string) (Text, error) {
	if _, err := s.queue(queue); err != nil {
		return Text{}, err
	}
	return s.texts.get(ctx, queue, s.Text)
}
