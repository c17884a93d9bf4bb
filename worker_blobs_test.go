package imagegen_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// hangingPuts is a BlobStore whose Put never answers: it waits until its
// context ends, as a network store that stopped answering does.
type hangingPuts struct{ imagegen.BlobStore }

func (hangingPuts) Put(ctx context.Context, _ string, _ io.Reader, _ int64, _ string) error {
	<-ctx.Done()
	return ctx.Err()
}

// onHangingBlobs puts the fixture's images in a hangingPuts, with a short
// Config.BlobTimeout.
func onHangingBlobs(t *testing.T) func(c *imagegen.Config) {
	hanging := onBlobs(t, func(b imagegen.BlobStore) imagegen.BlobStore { return hangingPuts{b} })
	return func(c *imagegen.Config) {
		hanging(c)
		blobTimeout(50 * time.Millisecond)(c)
	}
}

// runOnceWithin runs one task and fails t unless RunOnce returns within
// d (a worker never waits on a dead BlobStore for long).
func (f fixture) runOnceWithin(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case err := <-f.runOnceInBackground():
		is.New(t).NoErr(err)
	case <-time.After(d):
		t.Fatalf("the worker was still held after %v", d)
	}
}

// A worker whose image write does not answer gives the task back for a
// retry (the attempt counts) within Config.BlobTimeout, instead of
// holding it until its lease expires.
func TestImageWriteTimeoutRetriesTheTask(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1), onHangingBlobs(t))
	sub := f.submitFunded(t, "u")
	f.runOnceWithin(t, 5*time.Second)
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusPending) // back in the queue, not stuck processing
	is.Equal(task.Attempt, 1)
	is.True(strings.Contains(task.LastError, "did not answer in time"))
	is.Equal(f.balance(t, "u"), int64(0)) // still charged: it will run again
}

// On its last attempt the task fails and is refunded.
func TestImageWriteTimeoutOnTheLastAttemptRefunds(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1), onHangingBlobs(t), func(c *imagegen.Config) { c.MaxAttempts = 1 })
	sub := f.submitFunded(t, "u")
	f.runOnceWithin(t, 5*time.Second)
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(task.ErrorCode, imagegen.CodeInternal)
	is.Equal(f.balance(t, "u"), int64(1)) // refunded
}
