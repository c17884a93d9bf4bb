package imagegen_test

import (
	"context"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// A RunOnce whose context ends while its claim is under way must not
// leave the task that claim took held by no one until its lease runs
// out (an attempt used up): it is given back at once, with no attempt
// counted, and RunOnce reports the context's end.
func TestRunOnceCancelledDuringClaimGivesTheTaskBack(t *testing.T) {
	is := is.New(t)
	store := &lostClaimReply{started: make(chan struct{}), proceed: make(chan struct{})}
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
		store.Store = c.Store
		c.Store = store
	})
	sub := f.submitFunded(t, "u")
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		ran bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		ran, err := f.svc.RunOnce(runCtx)
		done <- result{ran, err}
	}()
	<-store.started
	cancel() // while the claim is in flight
	close(store.proceed)
	res := <-done
	is.True(!res.ran)
	is.True(errors.Is(res.err, context.Canceled))

	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusPending) // given back, not held until its lease ends
	is.Equal(task.CountedAttempts(), 0)           // the claim cut short uses up no attempt
	is.Equal(len(f.model.Calls()), 0)             // nothing ran

	is.True(f.runOnce(t)) // the next RunOnce runs it
	is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusSuccess)
}

// A RunOnce whose context has already ended claims nothing.
func TestRunOnceWithAnEndedContextClaimsNothing(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	sub := f.submitFunded(t, "u")
	ended, cancel := context.WithCancel(ctx)
	cancel()
	ran, err := f.svc.RunOnce(ended)
	is.True(!ran)
	is.True(errors.Is(err, context.Canceled))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusPending)
	is.Equal(task.LastError, "") // not claimed and released: never touched
}
