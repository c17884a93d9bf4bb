package imagegen_test

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// TestShutdownReleaseKeepsAttempts: a task given back when its worker
// shuts down has not used up an attempt: with MaxAttempts 2, a released
// task whose next attempt fails retryably is retried, not failed.
func TestShutdownReleaseKeepsAttempts(t *testing.T) {
	is := is.New(t)
	started := make(chan struct{})
	model := imagegentest.NewModel(1, imagegentest.Block(started, make(chan struct{})), imagegentest.Fail(retryable), imagegentest.Succeed())
	f := newFixture(t, model, func(c *imagegen.Config) { c.MaxAttempts = 2; c.ShutdownTimeout = time.Second })
	f.funded(t, "u", 1)
	sub := f.submit(t, "u")
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan error)
	go func() { stopped <- f.svc.Run(runCtx) }()
	<-started
	cancel()
	for done := false; !done; {
		select {
		case err := <-stopped:
			is.NoErr(err)
			done = true
		default:
			f.clock.Advance(time.Second) // fire the shutdown timer once Run waits on it
			time.Sleep(time.Millisecond)
		}
	}
	is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusPending) // released

	is.True(f.runOnce(t)) // the first counted attempt fails retryably
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusPending) // retried: one of two attempts used
	f.clock.Advance(time.Hour)                    // past the backoff
	is.True(f.runOnce(t))
	is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusSuccess)
	is.Equal(len(model.Calls()), 3)
	is.Equal(f.balance(t, "u"), int64(0))
}
