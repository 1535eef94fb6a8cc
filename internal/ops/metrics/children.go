package metrics

import "sync"

// children caches each label set's series, made on its first use:
// WithLabelValues hashes the values and takes a lock on every call, and its
// variadic slice allocates; a map read under a read lock does neither.
type children[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

// get returns k's series, made by newSeries the first time.
func (c *children[K, V]) get(k K, newSeries func(K) V) V {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok = c.m[k]; !ok {
		if c.m == nil {
			c.m = make(map[K]V)
		}
		v = newSeries(k)
		c.m[k] = v
	}
	return v
}
