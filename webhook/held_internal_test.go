package webhook

import (
	"sync"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// TestGivenBackKeysAreForgottenWhenIdle: a delivery given back while
// only its destination had its share in flight records when its owner's
// deliveries come again; once nothing of either is in flight, the
// dispatcher keeps nothing of them, however many owners it has seen (it
// kept one entry per such owner for as long as it ran).
func TestGivenBackKeysAreForgottenWhenIdle(t *testing.T) {
	d := &Dispatcher{cfg: Config{PollInterval: time.Second, AttemptTimeout: 10 * time.Second, PerDestination: 1, PerOwner: 1, Clock: imagegen.SystemClock{}},
		flying: map[string]int{}, moved: map[string]time.Time{}, back: map[string]backlog{}}
	d.freed = sync.NewCond(&d.mu)
	now := time.Now()
	d.mu.Lock()
	d.takeLocked("d:hook.example", "o:alice")
	// Others' deliveries to the same receiver are given back: their
	// owners have nothing in flight.
	for _, owner := range []string{"o:bob", "o:carol", "o:dave"} {
		if at := d.comeBackAt(now, "d:hook.example", owner); !at.After(now) {
			t.Errorf("%s: given back to come again at %v, not after %v", owner, at, now)
		}
	}
	d.mu.Unlock()
	d.give("d:hook.example", "o:alice")
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.flying) != 0 || len(d.moved) != 0 || len(d.back) != 0 {
		t.Errorf("nothing in flight, yet the dispatcher keeps flying %v, moved %v, back %v", d.flying, d.moved, d.back)
	}
}
