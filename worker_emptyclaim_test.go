package imagegen_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// emptyClaims is a store whose ClaimTasks claims nothing yet returns no
// error (a broken store: it should say ErrNoTask), counting the claims.
type emptyClaims struct {
	imagegen.Store
	claims atomic.Int64
}

func (s *emptyClaims) ClaimTasks(context.Context, imagegen.ClaimParams) ([]*imagegen.Task, error) {
	s.claims.Add(1)
	return []*imagegen.Task{}, nil
}

// An empty claim with no error is no task: RunOnce reports none instead
// of indexing the empty batch.
func TestRunOnceTakesAnEmptyClaimAsNoTask(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
		c.Store = &emptyClaims{Store: c.Store}
	})
	ran, err := f.svc.RunOnce(ctx)
	is.NoErr(err)
	is.True(!ran)
}

// Run waits for work after an empty claim with no error, as after
// ErrNoTask, rather than claiming again at once. The fixture's clock is
// manual, so the poll interval never ends: one claim is all there is.
func TestRunWaitsAfterAnEmptyClaim(t *testing.T) {
	is := is.New(t)
	var store *emptyClaims
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
		store = &emptyClaims{Store: c.Store}
		c.Store = store
	})
	cancel, stopped := f.runInBackground()
	time.Sleep(50 * time.Millisecond) // a spinning claim loop makes thousands of claims in this time
	cancel()
	is.NoErr(<-stopped)
	is.Equal(store.claims.Load(), int64(1))
}
