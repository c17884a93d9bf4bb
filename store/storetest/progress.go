package storetest

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// testProgress: the holder of a task records its progress, which the
// task shows without another change (UpdatedAt stays); a stale attempt,
// a finished task or an unknown one is ErrLeaseLost; a new claim starts
// again from 0.
func testProgress(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	task, c := startTask(t, s, "u", 1)
	is.Equal(get(t, s, "u", task.ID).Progress, 0.0)
	before := get(t, s, "u", task.ID).UpdatedAt
	h.Advance(lease / 10)
	is.NoErr(s.SetProgress(ctx, task.ID, c.Attempt, 0.25))
	is.NoErr(s.SetProgress(ctx, task.ID, c.Attempt, 0.625))
	got := get(t, s, "u", task.ID)
	is.Equal(got.Progress, 0.625)
	is.Equal(got.Status, imagegen.StatusProcessing)
	is.True(got.UpdatedAt.Equal(before)) // progress is no state change
	is.True(errors.Is(s.SetProgress(ctx, task.ID, c.Attempt+1, 0.9), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.SetProgress(ctx, "no-such-task", 1, 0.9), imagegen.ErrLeaseLost))
	is.Equal(get(t, s, "u", task.ID).Progress, 0.625)

	// Retried and claimed again: the new attempt starts from 0.
	is.NoErr(s.RetryTask(ctx, task.ID, c.Attempt, 0, "busy"))
	again := claim(t, s)
	is.Equal(again.ID, task.ID)
	is.Equal(again.Progress, 0.0)
	is.Equal(get(t, s, "u", task.ID).Progress, 0.0)
	is.True(errors.Is(s.SetProgress(ctx, task.ID, c.Attempt, 0.5), imagegen.ErrLeaseLost)) // the old attempt
	is.NoErr(s.SetProgress(ctx, task.ID, again.Attempt, 0.5))
	is.NoErr(s.CompleteTask(ctx, task.ID, again.Attempt, nil, nil))
	is.True(errors.Is(s.SetProgress(ctx, task.ID, again.Attempt, 0.75), imagegen.ErrLeaseLost)) // finished
}
