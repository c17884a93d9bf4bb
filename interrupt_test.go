package imagegen_test

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/store/memory"
)

// A running generation and what interrupts it: a shutdown gives its task
// back without using up an attempt; a spurious wake-up of the task's
// watch does not stop it.

// TestShutdownReleaseKeepsAttempts: a task given back when its worker
// shuts down has not used up an attempt: with MaxAttempts 2, a released
// task whose next attempt fails retryably is retried, not failed.
func TestShutdownReleaseKeepsAttempts(t *testing.T) {
	is := is.New(t)
	started := make(chan struct{})
	model := imagegentest.NewModel(1, imagegentest.Block(started, make(chan struct{})), imagegentest.Fail(retryable), imagegentest.Succeed())
	f := newFixture(t, model, func(c *imagegen.Config) { c.MaxAttempts = 2; c.ShutdownTimeout = time.Second })
	sub := f.submitFunded(t, "u")
	cancel, stopped := f.runInBackground()
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

// spuriousStore wakes every watcher at once, as a store that lost its
// notifications may (Store.WatchTask allows it).
type spuriousStore struct{ imagegen.Store }

func (spuriousStore) WatchTask(context.Context, string) (<-chan struct{}, func(), error) {
	ch := make(chan struct{})
	close(ch)
	return ch, func() {}, nil
}

// A spurious wake-up of the task's watch does not stop a running
// generation: the worker re-reads the task and carries on.
func TestSpuriousWatchWakeUpDoesNotStopGeneration(t *testing.T) {
	is := is.New(t)
	started, release := make(chan struct{}), make(chan struct{})
	model := imagegentest.NewModel(1, imagegentest.Block(started, release))
	svc, err := imagegen.New(imagegen.Config{Store: spuriousStore{memory.New(memory.Config{})}, Model: model, Logger: quiet})
	is.NoErr(err)
	_, err = svc.Grant(ctx, "u", 1, "g")
	is.NoErr(err)
	sub, err := svc.Submit(ctx, "u", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"})
	is.NoErr(err)
	done := make(chan struct{})
	go func() { defer close(done); _, _ = svc.RunOnce(ctx) }()
	<-started
	time.Sleep(50 * time.Millisecond) // the watcher has woken many times meanwhile
	close(release)
	<-done
	task, err := svc.Task(ctx, "u", sub.TaskID)
	is.NoErr(err)
	is.Equal(task.Status, imagegen.StatusSuccess)
}
