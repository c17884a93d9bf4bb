package imagegen_test

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// waitsClock is the fixture's manual clock, reporting each wait of one
// duration once its timer is set: a test that receives the report knows
// that a loop waits for that duration, and may advance the clock past it
// with no sleep and no guess.
type waitsClock struct {
	*imagegentest.Clock
	d     time.Duration
	armed chan struct{}
}

// newWaitsClock returns a waitsClock for the waits of d; install it with
// newFixture. d should be unlike the fixture's other waits.
func newWaitsClock(d time.Duration) *waitsClock {
	return &waitsClock{d: d, armed: make(chan struct{}, 64)}
}

// install makes the waitsClock the service's clock, over the fixture's.
func (w *waitsClock) install(c *imagegen.Config) {
	w.Clock = c.Clock.(*imagegentest.Clock)
	c.Clock = w
}

func (w *waitsClock) After(d time.Duration) <-chan time.Time {
	ch := w.Clock.After(d)
	if d == w.d {
		select {
		case w.armed <- struct{}{}:
		default: // nobody listens any more
		}
	}
	return ch
}

// waited returns once a wait of d has begun since the last report. The
// minute is a safety bound for a hung test, not a measure.
func (w *waitsClock) waited(t *testing.T) {
	t.Helper()
	select {
	case <-w.armed:
	case <-time.After(time.Minute):
		t.Fatalf("nothing waited for %v within a minute", w.d)
	}
}
