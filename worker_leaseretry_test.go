package imagegen_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// unreachableRenewals is a store whose lease renewals fail, as a store
// out of reach does, until the clock passes back.
type unreachableRenewals struct {
	imagegen.Store
	clock *imagegentest.Clock
	back  time.Time
}

func (s *unreachableRenewals) RenewLease(ctx context.Context, id string, attempt int, d time.Duration) error {
	if s.clock.Now().Before(s.back) {
		return errors.New("store out of reach")
	}
	return s.Store.RenewLease(ctx, id, attempt, d)
}

// A store out of reach for most of a lease does not cost the generation:
// a renewal that fails is tried again well before the lease would end
// (a store refuses to renew a lease that has ended), not only at the
// next third of the lease.
func TestFailedRenewalIsRetriedBeforeTheLeaseEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		started, release := make(chan struct{}), make(chan struct{})
		released := false
		defer func() {
			if !released {
				close(release) // when an assertion fails: nothing stays blocked in the bubble
			}
		}()
		var store *unreachableRenewals
		f := newFixture(t, imagegentest.NewModel(1, imagegentest.Block(started, release)), func(c *imagegen.Config) {
			store = &unreachableRenewals{Store: c.Store, clock: c.Clock.(*imagegentest.Clock)}
			c.Store = store
		})
		sub := f.submitFunded(t, "u")
		done := f.runOnceInBackground()
		<-started
		// Out of reach from the claim until a little past two thirds of
		// the lease: the renewals at one and two thirds both fail.
		store.back = f.clock.Now().Add(2*lease/3 + lease/24)
		for range 32 { // four thirds of the lease, in steps of a twenty-fourth
			synctest.Wait()
			f.clock.Advance(lease / 24)
		}
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the generation ended (%v) while the store was back in reach", err)
		default:
		}
		close(release)
		released = true
		is.NoErr(<-done)
		task := f.task(t, "u", sub.TaskID)
		is.Equal(task.Status, imagegen.StatusSuccess)
		is.Equal(task.Attempt, 1)
		is.Equal(len(f.model.Calls()), 1)
	})
}
