package metrics

import (
	"maps"
	"sync"
	"sync/atomic"
)

// children remembers the children of a metric vector already looked up,
// by their labels, so that a hot path counts without hashing its label
// values each time. Labels here are few (route patterns, codes, scenes,
// models), so it stays small: a lookup reads the current map without a
// lock (one atomic load, no write to memory that every request shares),
// and a new child is added to a copy of it.
type children[K comparable, V any] struct {
	m  atomic.Pointer[map[K]V] // never changed once stored
	mu sync.Mutex              // held while a child is added
}

// get returns k's child, made by lookup the first time.
func (c *children[K, V]) get(k K, lookup func() V) V {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var next map[K]V
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
		next = maps.Clone(*m)
	}
	if next == nil {
		next = map[K]V{}
	}
	v := lookup()
	next[k] = v
	c.m.Store(&next)
	return v
}
