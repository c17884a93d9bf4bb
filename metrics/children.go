package metrics

import "sync"

// children remembers the children of a metric vector already looked up,
// by their labels, so that a hot path counts without hashing its label
// values each time. Labels here are few (route patterns, codes, scenes,
// models), so it stays small.
type children[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

// get returns k's child, made by lookup the first time.
func (c *children[K, V]) get(k K, lookup func() V) V {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[k]; ok {
		return v
	}
	if c.m == nil {
		c.m = map[K]V{}
	}
	v = lookup()
	c.m[k] = v
	return v
}
