package providertest

import (
	"sync"
	"time"

	"github.com/imagegen/imagegen"
)

var _ imagegen.Clock = (*InstantClock)(nil)

// InstantClock records every wait asked of it and lets it pass at once, moving
// its time forward by the wait. It is safe for concurrent use.
type InstantClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

// NewInstantClock returns an InstantClock at a fixed date.
func NewInstantClock() *InstantClock {
	return &InstantClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *InstantClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After records d, moves the clock on by d and fires at once.
func (c *InstantClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(max(d, 0))
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// Waits returns the waits asked for so far, in order.
func (c *InstantClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}
