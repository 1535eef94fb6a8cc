package handoff

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// qrCache keeps each hand-over's picture until the hand-over expires,
// drawn once however many ask for it at the same time. An entry is a
// picture of a link its holder already has, so serving it after the
// hand-over was used (from a replica that did not see the use) tells
// nobody anything new. When full, the picture asked for least recently
// goes (drawn again if asked for again).
type qrCache struct {
	mu      sync.Mutex
	entries *simplelru.LRU[string, qrEntry]
	filling map[string]*qrFill
}

// qrEntry is a picture and when its hand-over expires.
type qrEntry struct {
	png   []byte
	until time.Time
}

// qrFill is a picture being drawn; done closes when entry and err are set.
type qrFill struct {
	done  chan struct{}
	entry qrEntry
	err   error
}

func newQRCache(max int) *qrCache {
	return &qrCache{entries: newLRU[qrEntry](max), filling: map[string]*qrFill{}}
}

// get returns the picture of key, from the cache or from fill, which
// runs once for callers that ask at the same time; each waits at most as
// long as its ctx. A failed fill is not kept.
func (c *qrCache) get(ctx context.Context, key string, fill func() (qrEntry, error)) ([]byte, error) {
	now := time.Now()
	c.mu.Lock()
	if e, ok := c.entries.Get(key); ok && now.Before(e.until) {
		c.mu.Unlock()
		return e.png, nil
	}
	f, waiting := c.filling[key]
	if !waiting {
		f = &qrFill{done: make(chan struct{})}
		c.filling[key] = f
	}
	c.mu.Unlock()
	if waiting {
		select {
		case <-f.done:
			return f.entry.png, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.entry, f.err = fill()
	c.mu.Lock()
	delete(c.filling, key)
	if f.err == nil {
		c.entries.Add(key, f.entry)
	}
	c.mu.Unlock()
	close(f.done)
	return f.entry.png, f.err
}

// len is how many pictures are kept.
func (c *qrCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries.Len()
}
