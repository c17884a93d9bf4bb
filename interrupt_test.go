package imagegen_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
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
	shutdown := newWaitsClock(time.Second)
	f := newFixture(t, model, shutdown.install, func(c *imagegen.Config) { c.MaxAttempts = 2; c.ShutdownTimeout = time.Second })
	sub := f.submitFunded(t, "u")
	cancel, stopped := f.runInBackground()
	<-started
	cancel()
	shutdown.waited(t)           // Run waits for the generation up to ShutdownTimeout
	f.clock.Advance(time.Second) // then gives up on it
	is.NoErr(<-stopped)
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
// notifications may (Store.WatchTask allows it), and counts the watches.
type spuriousStore struct {
	imagegen.Store
	watches atomic.Int64
}

func (s *spuriousStore) WatchTask(context.Context, string) (<-chan struct{}, func(), error) {
	s.watches.Add(1)
	ch := make(chan struct{})
	close(ch)
	return ch, func() {}, nil
}

// A spurious wake-up of the task's watch does not stop a running
// generation: the worker re-reads the task and carries on, however many
// times it is woken.
func TestSpuriousWatchWakeUpDoesNotStopGeneration(t *testing.T) {
	is := is.New(t)
	started, release := make(chan struct{}), make(chan struct{})
	model := imagegentest.NewModel(1, imagegentest.Block(started, release))
	const poll = 2 * time.Second // the pause before watching again; unlike the lease's renewal (10 s)
	pauses := newWaitsClock(poll)
	pauses.Clock = imagegentest.NewClock(time.Time{})
	store := &spuriousStore{Store: testenv.Memory(t, memory.Config{Clock: pauses.Clock})}
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: model, Clock: pauses, Logger: quiet, WorkerConfig: imagegen.WorkerConfig{PollInterval: poll}})
	is.NoErr(err)
	_, err = svc.Grant(ctx, "u", 1, "g")
	is.NoErr(err)
	sub, err := svc.Submit(ctx, "u", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"})
	is.NoErr(err)
	done := make(chan struct{})
	go func() { defer close(done); _, _ = svc.RunOnce(ctx) }()
	<-started
	pauses.waited(t) // woken at once, it read the task and pauses before watching again
	for range 3 {
		pauses.Clock.Advance(poll)
		pauses.waited(t) // watched again, woken again, read again: it goes on
	}
	is.Equal(store.watches.Load(), int64(4))
	close(release)
	<-done
	task, err := svc.Task(ctx, "u", sub.TaskID)
	is.NoErr(err)
	is.Equal(task.Status, imagegen.StatusSuccess)
}
