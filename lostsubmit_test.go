package imagegen_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv"
)

// cancelCounter counts CancelTask calls on its store.
type cancelCounter struct {
	imagegen.Store
	n atomic.Int64
}

func (c *cancelCounter) CancelTask(ctx context.Context, owner, id string, p imagegen.CancelParams) (int64, error) {
	c.n.Add(1)
	return c.Store.CancelTask(ctx, owner, id, p)
}

// Many lost submits of unknown outcome (a store outage) are cancelled
// again on one goroutine, not one goroutine each (whose number grew with
// the request rate for four minutes): each still gets its eight more
// tries, at 1 s, 2 s, … 128 s, and then nothing is left waiting.
func TestLostSubmitsAreCancelledAgainOnOneGoroutine(t *testing.T) {
	var counter *cancelCounter
	f := newFixture(t, nil, func(c *imagegen.Config) {
		counter = &cancelCounter{Store: c.Store}
		c.Store = counter
	})
	const lost = 300
	waiters := f.clock.Waiters()
	goroutines := runtime.NumGoroutine()
	for range lost {
		err := &imagegen.SubmitUnknownError{TaskID: uuid.NewString(), Err: fmt.Errorf("no reply: %w", imagegen.ErrOutcomeUnknown)}
		f.svc.CancelLostSubmit(ctx, "alice", err)
	}
	if counter.n.Load() != lost {
		t.Fatalf("%d first cancels; want %d", counter.n.Load(), lost)
	}
	testenv.Eventually(t, 5*time.Second, "the cancels to wait on the clock", func() bool { return f.clock.Waiters() > waiters })
	if n := runtime.NumGoroutine() - goroutines; n > 10 {
		t.Fatalf("%d more goroutines for %d lost submits; want them cancelled again on one", n, lost)
	}
	tried := int64(lost)
	for wait := time.Second; wait <= 128*time.Second; wait *= 2 {
		testenv.Eventually(t, 5*time.Second, "a cancel to wait on the clock", func() bool { return f.clock.Waiters() > waiters })
		f.clock.Advance(wait)
		tried += lost
		testenv.Eventually(t, 5*time.Second, fmt.Sprintf("%d cancels", tried), func() bool { return counter.n.Load() == tried })
	}
	testenv.Eventually(t, 5*time.Second, "the cancelling to stop", func() bool { return f.clock.Waiters() == waiters })
	if counter.n.Load() != 9*lost {
		t.Fatalf("%d cancels; want 9 for each of %d lost submits", counter.n.Load(), lost)
	}
}
