package imagegen_test

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// A worker stalled past its lease (the process paused, or the store out
// of reach for a lease's length) finds its renewal refused: the lease
// ended and its slot may have gone to another task. The generation
// stops, and the worker stores no outcome of its own: the generation
// did not fail, the lease did, so the provider is not blamed and the
// attempt is not retried as if it had failed. Recovery takes the task
// back as for any ended lease: requeued, or on its last attempt failed
// (CodeInternal, the expired-lease message) and refunded once.
func TestEndedLeaseStopsTheGenerationAndLeavesTheTaskToRecovery(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maxAttempts int
		want        imagegen.Status
	}{
		{"requeued", 3, imagegen.StatusPending},
		{"failed on its last attempt", 1, imagegen.StatusFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				var logs bytes.Buffer
				started, release := make(chan struct{}), make(chan struct{})
				defer close(release) // when an assertion fails: nothing stays blocked in the bubble
				f := newFixture(t, imagegentest.NewModel(1, imagegentest.Block(started, release)),
					logTo(&logs), func(c *imagegen.Config) { c.MaxAttempts = tc.maxAttempts })
				sub := f.submitFunded(t, "u")
				is.Equal(f.balance(t, "u"), int64(0))
				done := f.runOnceInBackground()
				<-started
				synctest.Wait()
				f.clock.Advance(lease) // the renewal comes when the lease has ended
				synctest.Wait()
				select {
				case err := <-done:
					is.NoErr(err)
				default:
					t.Fatal("the generation still runs on a lease that ended")
				}
				task := f.task(t, "u", sub.TaskID)
				is.Equal(task.Status, imagegen.StatusProcessing) // no outcome stored by the worker
				is.Equal(task.Attempt, 1)
				is.True(strings.Contains(logs.String(), "lease lost"))

				n, err := f.svc.Recover(ctx)
				is.NoErr(err)
				is.Equal(n, 1)
				task = f.task(t, "u", sub.TaskID)
				is.Equal(task.Status, tc.want)
				if tc.want == imagegen.StatusFailed {
					is.Equal(task.ErrorCode, imagegen.CodeInternal)
					is.Equal(f.balance(t, "u"), int64(1)) // refunded once
				} else {
					is.Equal(f.balance(t, "u"), int64(0))
				}
				n, err = f.svc.Recover(ctx)
				is.NoErr(err)
				is.Equal(n, 0)
				is.Equal(len(f.model.Calls()), 1)
			})
		})
	}
}
