// Package throttle lets a chore that callers trigger on their way (such
// as sweeping expired rows) run at most once an interval, by this
// process's clock.
package throttle

import (
	"sync"
	"time"
)

// Gate opens at most once an interval. The zero Gate is open; it is safe
// for concurrent use.
type Gate struct {
	mu     sync.Mutex
	opened time.Time
}

// Due reports whether every has passed since the gate last opened, and
// if so opens it: of callers racing for one interval, one is told yes.
func (g *Gate) Due(every time.Duration) bool {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.opened.IsZero() && now.Sub(g.opened) < every {
		return false
	}
	g.opened = now
	return true
}
