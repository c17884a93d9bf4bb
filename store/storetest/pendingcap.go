package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	imagegen "github.com/imagegen/imagegen"
)

// pendingIs checks that owner has exactly want pending tasks, through
// the pending cap alone: a submit capped at want is refused, one capped
// at want+1 is taken. It leaves want+1 pending and returns that.
func pendingIs(t *testing.T, s imagegen.Store, owner string, want int) int {
	t.Helper()
	_, err := s.CreateTask(ctx, newTask(owner, 1), imagegen.CreateParams{MaxPending: want})
	if !errors.Is(err, imagegen.ErrQueueFull) {
		t.Fatalf("submit capped at %d: %v, want ErrQueueFull (fewer than %d pending)", want, err, want)
	}
	if _, err := s.CreateTask(ctx, newTask(owner, 1), imagegen.CreateParams{MaxPending: want + 1}); err != nil {
		t.Fatalf("submit capped at %d: %v (more than %d pending)", want+1, err, want)
	}
	return want + 1
}

// testMaxPendingThroughTransitions: the pending cap counts exactly the
// owner's pending tasks after every way into and out of pending: claim,
// retry, release, cancel, lease expiry, failure and requeue.
func testMaxPendingThroughTransitions(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "a", 100)
	for range 2 {
		_, err := s.CreateTask(ctx, newTask("a", 1), imagegen.CreateParams{})
		is.NoErr(err)
	}
	n := pendingIs(t, s, "a", 2)

	claim(t, s)
	n = pendingIs(t, s, "a", n-1)

	c := claim(t, s)
	is.NoErr(s.RetryTask(ctx, c.ID, c.Attempt, 0, "try again"))
	n = pendingIs(t, s, "a", n) // out and back in

	c = claim(t, s)
	is.NoErr(s.ReleaseTask(ctx, c.ID, c.Attempt))
	n = pendingIs(t, s, "a", n)

	c = claim(t, s)
	n--
	_, err := s.CancelTask(ctx, "a", c.ID) // processing: not counted
	is.NoErr(err)
	n = pendingIs(t, s, "a", n)

	page, err := s.ListTasks(ctx, "a", imagegen.StatusPending, 1, "")
	is.NoErr(err)
	is.Equal(len(page.Tasks), 1)
	_, err = s.CancelTask(ctx, "a", page.Tasks[0].ID)
	is.NoErr(err)
	n = pendingIs(t, s, "a", n-1)

	c, err = s.ClaimTask(ctx, time.Second)
	is.NoErr(err)
	n = pendingIs(t, s, "a", n-1)
	h.Advance(2 * time.Second)
	recoverNow(t, s, 10)
	n = pendingIs(t, s, "a", n+1)

	c = claim(t, s)
	_, err = s.FailTask(ctx, c.ID, c.Attempt, fail("broken"))
	is.NoErr(err)
	n = pendingIs(t, s, "a", n-1)
	is.NoErr(s.RequeueTask(ctx, c.ID, true))
	pendingIs(t, s, "a", n+1)
}
