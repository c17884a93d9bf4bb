package imagegen_test

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// An image of no bytes is no image: the attempt fails (retryable) as
// when the model returns none, rather than the task succeeding, its
// credits kept, with an empty download. After its last attempt the
// task is failed and refunded once.
func TestEmptyImageIsAFailure(t *testing.T) {
	is := is.New(t)
	empty := func(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		return []imagegen.GeneratedImage{{ContentType: "image/png", Data: imagegentest.TinyPNG()}, {ContentType: "image/png"}}, nil
	}
	f := newFixture(t, imagegentest.NewModel(1, empty, empty, empty))
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusPending) // retried
	for i := 0; i < 2; i++ {
		f.clock.Advance(time.Hour)
		is.True(f.runOnce(t))
	}
	task = f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(len(task.Images), 0)
	is.Equal(f.balance(t, "u"), int64(1))
}
