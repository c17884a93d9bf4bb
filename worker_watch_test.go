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
