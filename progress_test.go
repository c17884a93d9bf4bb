package imagegen_test

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// A model's progress reaches the task in the store, at most once every
// ProgressInterval and only when it moved by MinProgressStep; values
// out of 0..1 are clamped.
func TestProgressIsWrittenRarely(t *testing.T) {
	is := is.New(t)
	var f fixture
	var seen []float64 // the task's progress in the store after each report
	report := func(ctx context.Context, g imagegen.Generation, p float64) {
		g.ReportProgress(p)
		task, err := f.store.Task(ctx, "u", g.TaskID)
		is.NoErr(err)
		seen = append(seen, task.Progress)
	}
	f = newFixture(t, imagegentest.NewModel(1, func(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		report(ctx, g, 0.1) // the first: written
		report(ctx, g, 0.3) // within the interval: dropped
		f.clock.Advance(imagegen.ProgressInterval)
		report(ctx, g, 0.105) // moved too little since the last write: dropped
		report(ctx, g, 0.5)   // written
		f.clock.Advance(imagegen.ProgressInterval)
		report(ctx, g, 7) // clamped to 1
		return imagegentest.Succeed()(ctx, g)
	}))
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	is.Equal(seen, []float64{0.1, 0.1, 0.1, 0.5, 1})
	is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusSuccess)
}

// A model that reports nothing leaves the progress at 0, and a report
// after the task ended elsewhere changes nothing.
func TestProgressOfAnEndedAttemptIsDropped(t *testing.T) {
	is := is.New(t)
	var f fixture
	f = newFixture(t, imagegentest.NewModel(1, func(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		is.NoErr(errOf(f.store.CancelTask(ctx, "u", g.TaskID)))
		g.ReportProgress(0.5) // the lease is lost: dropped
		return nil, ctx.Err()
	}))
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(task.Progress, 0.0)
}
