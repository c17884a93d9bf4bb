package storetest

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// testRelease: a task given back at shutdown is ready again at once and
// its claim does not count against maxAttempts (Attempt - Released), while
// the fencing token still grows.
func testRelease(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 1)
	task := submit(t, s, "u", 1)
	first := claim(t, s)
	is.True(errors.Is(s.ReleaseTask(ctx, task.ID, first.Attempt+1), imagegen.ErrLeaseLost)) // fenced
	is.NoErr(s.ReleaseTask(ctx, task.ID, first.Attempt))
	is.True(errors.Is(s.ReleaseTask(ctx, task.ID, first.Attempt), imagegen.ErrLeaseLost)) // not twice
	back := get(t, s, "u", task.ID)
	is.Equal(back.Status, imagegen.StatusPending)
	is.Equal(back.Released, 1)
	is.True(back.LastError != "")

	second := claim(t, s) // ready at once
	is.Equal(second.ID, task.ID)
	is.Equal(second.Attempt, 2) // the fencing token still grows
	is.Equal(second.Released, 1)
	is.True(errors.Is(s.CompleteTask(ctx, task.ID, first.Attempt, nil), imagegen.ErrLeaseLost))

	// With one attempt allowed, the released claim did not use it up: an
	// expired lease now is the task's first counted attempt, so it is
	// requeued rather than failed.
	h.Advance(lease)
	rec, err := s.RecoverExpired(ctx, 2)
	is.NoErr(err)
	is.Equal(rec.Requeued, 1)
	is.Equal(len(rec.Failed), 0)
	is.Equal(get(t, s, "u", task.ID).Status, imagegen.StatusPending)
	third := claim(t, s)
	is.Equal(third.Attempt, 3)
	h.Advance(lease)
	rec, err = s.RecoverExpired(ctx, 2) // 3 claims, 1 released: 2 counted
	is.NoErr(err)
	is.Equal(rec.Requeued, 0)
	is.Equal(len(rec.Failed), 1)
	is.Equal(rec.Failed[0].Attempts, 2)
	failed := get(t, s, "u", task.ID)
	is.Equal(failed.Status, imagegen.StatusFailed)
	is.True(failed.Refunded)
	is.Equal(balance(t, s, "u"), int64(1))
}
