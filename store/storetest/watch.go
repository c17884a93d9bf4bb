package storetest

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

// finishedWithin reports whether ch is closed within a generous bound
// (the bound only stops a broken store from hanging the suite).
func finishedWithin(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func testWatch(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 3)
	ok1, bad, cancelled := submit(t, s, "u", 1), submit(t, s, "u", 1), submit(t, s, "u", 1)
	watch := func(id string) (<-chan struct{}, func()) {
		ch, stop, err := s.WatchTask(ctx, id)
		is.NoErr(err)
		t.Cleanup(stop)
		return ch, stop
	}
	chOK, _ := watch(ok1.ID)
	chOK2, stopOK2 := watch(ok1.ID) // two watchers of one task
	chBad, _ := watch(bad.ID)
	chCancelled, _ := watch(cancelled.ID)
	stopOK2()

	c := claim(t, s)
	is.NoErr(s.RenewLease(ctx, c.ID, c.Attempt, lease))
	is.True(!isClosed(chOK)) // claimed and renewed, not finished
	is.NoErr(s.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{image(c.ID + "-img")}, nil))
	is.True(finishedWithin(chOK))
	_ = chOK2 // stopped: it may or may not be closed, but must not block anything

	c = claim(t, s)
	is.NoErr(errOf(s.FailTask(ctx, c.ID, c.Attempt, fail("no"))))
	is.True(finishedWithin(chBad))

	is.NoErr(errOf(s.CancelTask(ctx, "u", cancelled.ID, imagegen.CancelParams{})))
	is.True(finishedWithin(chCancelled))
}
