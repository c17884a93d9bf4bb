package storetest

import (
	"testing"
	"time"

	"github.com/matryer/is"
)

// testQueuePositions: a pending task's position is how many pending
// tasks are ahead of it in claim order; anything not pending has none.
// The first claim stamps StartedAt, and a retry keeps it.
func testQueuePositions(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 3)
	grant(t, s, "v", 1)
	a := submit(t, s, "u", 1)
	h.Advance(time.Millisecond)
	b := submit(t, s, "v", 1) // another owner's task counts: the queue is shared
	h.Advance(time.Millisecond)
	c := submit(t, s, "u", 1)
	h.Advance(time.Millisecond)
	d := submit(t, s, "u", 1)
	positions := func(ids ...string) []int {
		t.Helper()
		p, err := s.QueuePositions(ctx, ids)
		is.NoErr(err)
		return p
	}
	is.Equal(positions(a.ID, b.ID, c.ID, d.ID, "no-such-task"), []int{0, 1, 2, 3, -1})
	is.Equal(len(positions()), 0)
	is.True(get(t, s, "u", a.ID).StartedAt.IsZero()) // not started while pending

	h.Advance(time.Second)
	first := claim(t, s)
	is.Equal(first.ID, a.ID)
	started := get(t, s, "u", a.ID).StartedAt
	is.True(!started.IsZero())
	is.True(!started.Before(get(t, s, "u", a.ID).CreatedAt.Add(time.Second)))
	is.Equal(positions(a.ID, b.ID, c.ID, d.ID), []int{-1, 0, 1, 2})

	is.NoErr(s.CancelTask(ctx, "v", b.ID))
	is.Equal(positions(b.ID, c.ID, d.ID), []int{-1, 0, 1})

	// A retry goes back behind the tasks that are due before it, and
	// keeps the time it first started.
	h.Advance(time.Second)
	is.NoErr(s.RetryTask(ctx, a.ID, first.Attempt, time.Hour, "busy"))
	is.Equal(positions(a.ID, c.ID, d.ID), []int{2, 0, 1})
	is.Equal(get(t, s, "u", a.ID).StartedAt, started)
	is.NoErr(s.CompleteTask(ctx, claim(t, s).ID, 1, nil)) // c
	is.Equal(positions(a.ID, c.ID, d.ID), []int{1, -1, 0})
	h.Advance(time.Hour)
	claim(t, s) // d
	again := claim(t, s)
	is.Equal(again.ID, a.ID)
	is.Equal(get(t, s, "u", a.ID).StartedAt, started) // the first start, not the latest
}
