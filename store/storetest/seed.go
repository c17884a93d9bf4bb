package storetest

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// testSeedAtFinish: CompleteTask with a seed (the one the model reports
// it used) makes it the task's seed, in every read, and leaves the rest
// of the request as it was; a stale attempt changes nothing; without a
// seed the task keeps its own, or none.
func testSeedAtFinish(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	seeded := func(seed *int64) (task, claimed *imagegen.Task) {
		t.Helper()
		task = newTask("u", 1)
		task.Request.Seed = seed
		grant(t, s, "u", 1)
		create(t, s, task)
		claimed = claim(t, s)
		is.Equal(claimed.ID, task.ID)
		return task, claimed
	}
	sent, used := int64(42), int64(imagegen.MaxSeed)

	task, c := seeded(&sent)
	is.Equal(*c.Request.Seed, sent)
	is.True(errors.Is(s.CompleteTask(ctx, task.ID, c.Attempt+1, nil, &used), imagegen.ErrLeaseLost))
	is.Equal(*get(t, s, "u", task.ID).Request.Seed, sent) // the stale attempt changed nothing
	is.NoErr(s.CompleteTask(ctx, task.ID, c.Attempt, nil, &used))
	used = 7 // the store keeps its own copy
	got := get(t, s, "u", task.ID)
	is.Equal(got.Status, imagegen.StatusSuccess)
	is.Equal(*got.Request.Seed, int64(imagegen.MaxSeed))
	want := task.Request
	want.Seed = got.Request.Seed
	is.Equal(got.Request, want) // the rest of the request as submitted
	byID, err := s.TaskByID(ctx, task.ID)
	is.NoErr(err)
	is.Equal(*byID.Request.Seed, int64(imagegen.MaxSeed))
	page, err := s.ListTasks(ctx, "u", imagegen.StatusSuccess, 10, "")
	is.NoErr(err)
	listed := 0
	for _, lt := range page.Tasks {
		if lt.ID == task.ID {
			listed++
			is.Equal(*lt.Request.Seed, int64(imagegen.MaxSeed))
		}
	}
	is.Equal(listed, 1)

	kept, c := seeded(&sent)
	is.NoErr(s.CompleteTask(ctx, kept.ID, c.Attempt, nil, nil))
	is.Equal(*get(t, s, "u", kept.ID).Request.Seed, sent)

	none, c := seeded(nil)
	is.NoErr(s.CompleteTask(ctx, none.ID, c.Attempt, nil, nil))
	is.Equal(get(t, s, "u", none.ID).Request.Seed, nil)
}
