package imagegen_test

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// panics is a model step that panics, as a provider adapter with a bug
// does on an answer it did not expect.
func panics(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	panic("adapter bug: index out of range")
}

// A model that panics fails its attempt like an error that is not the
// model's: the task is retried, then failed and refunded once on its
// last attempt. The panic does not end the worker (nor, in imagegen
// serve, the HTTP API beside it), and the task is not left processing
// until its lease runs out.
func TestModelPanicFailsTheAttempt(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(2, panics, panics, panics))
	f.funded(t, "u", 2)
	sub := f.submit(t, "u")
	is.Equal(f.balance(t, "u"), int64(0))

	is.True(f.runOnce(t)) // the panic is recovered
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusPending) // retried, not held by a dead attempt
	is.True(task.LastError != "")

	for i := 0; i < 2; i++ {
		f.clock.Advance(time.Hour) // past any backoff
		is.True(f.runOnce(t))
	}
	task = f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(task.Attempt, 3)
	is.Equal(task.ErrorCode, imagegen.CodeInternal)
	is.Equal(f.balance(t, "u"), int64(2)) // refunded once
	is.True(!f.runOnce(t))
}

// A model that returns a nil *ModelError as its error (the typed nil of
// an adapter whose helper returns *ModelError) has not failed: the
// worker takes its images, where reading that error (its Error, its
// Unwrap) panicked and ended the process.
func TestModelNilModelErrorIsNoError(t *testing.T) {
	is := is.New(t)
	typedNil := func(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		var me *imagegen.ModelError
		return []imagegen.GeneratedImage{{ContentType: "image/png", Data: imagegentest.TinyPNG()}}, me
	}
	f := newFixture(t, imagegentest.NewModel(1, typedNil))
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusSuccess)
	is.Equal(len(task.Images), 1)
	is.Equal(f.balance(t, "u"), int64(0)) // charged once, kept
}
