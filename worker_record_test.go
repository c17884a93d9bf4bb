package imagegen_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
)

// heldCompletes is a store whose CompleteTask waits until release is
// closed, counting how many wait at once.
type heldCompletes struct {
	imagegen.Store
	release chan struct{}

	mu            sync.Mutex
	waiting, peak int
}

func (s *heldCompletes) CompleteTask(ctx context.Context, id string, attempt int, images []imagegen.Image, seed *int64) error {
	s.mu.Lock()
	s.waiting++
	s.peak = max(s.peak, s.waiting)
	s.mu.Unlock()
	<-s.release
	s.mu.Lock()
	s.waiting--
	s.mu.Unlock()
	return s.Store.CompleteTask(ctx, id, attempt, images, seed)
}

func (s *heldCompletes) counts() (waiting, peak int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting, s.peak
}

// A generation's slot is free once the model has answered: the next
// task starts while earlier outcomes are still being stored, and at most
// 4×Workers outcomes wait to be stored (the fifth finished generation
// keeps its slot, so no sixth starts).
func TestOutcomesAreStoredBesideTheNextGenerations(t *testing.T) {
	// In a bubble, synctest.Wait returns once every goroutine is blocked
	// for good: then whatever would start has started.
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		var held *heldCompletes
		f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
			held = &heldCompletes{Store: c.Store, release: make(chan struct{})}
			c.Store, c.Workers = held, 1
		})
		f.funded(t, "u", 7)
		var ids []string
		for range 7 {
			ids = append(ids, f.submit(t, "u").TaskID)
		}
		cancel, stopped := f.runInBackground()
		release := sync.OnceFunc(func() { close(held.release) })
		stop := sync.OnceValue(func() error { release(); cancel(); return <-stopped })
		defer stop() // also when an assertion fails: nothing stays blocked in the bubble

		// One worker, yet five generations ran while no outcome was
		// stored, and no sixth starts.
		synctest.Wait()
		is.Equal(len(f.model.Calls()), 5)
		waiting, _ := held.counts()
		is.Equal(waiting, 4)

		release()
		testenv.Eventually(t, 5*time.Second, "every task succeeds", func() bool { return f.succeeded(t, "u", ids) })
		is.NoErr(stop())
		is.Equal(len(f.model.Calls()), 7) // each task ran once
		_, peak := held.counts()
		is.Equal(peak, 4) // 4×Workers outcomes waited at most
	})
}
