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
	_, err := s.CancelTask(ctx, "a", c.ID, imagegen.CancelParams{}) // processing: not counted
	is.NoErr(err)
	n = pendingIs(t, s, "a", n)

	page, err := s.ListTasks(ctx, "a", imagegen.StatusPending, 1, "")
	is.NoErr(err)
	is.Equal(len(page.Tasks), 1)
	_, err = s.CancelTask(ctx, "a", page.Tasks[0].ID, imagegen.CancelParams{})
	is.NoErr(err)
	n = pendingIs(t, s, "a", n-1)

	c, err = s.ClaimTask(ctx, time.Second)
	is.NoErr(err)
	n = pendingIs(t, s, "a", n-1)
	h.Advance(2 * time.Second)
	recoverNow(t, s, 10)
	is.Equal(get(t, s, "a", c.ID).Status, imagegen.StatusPending) // the expired lease's task is back
	n = pendingIs(t, s, "a", n+1)

	c = claim(t, s)
	_, err = s.FailTask(ctx, c.ID, c.Attempt, fail("broken"))
	is.NoErr(err)
	n = pendingIs(t, s, "a", n-1)
	is.NoErr(s.RequeueTask(ctx, c.ID, true))
	pendingIs(t, s, "a", n+1)
}

// testMaxPendingThroughBatchedClaims: the pending cap counts exactly
// after claims that take several tasks of several owners at once, with
// no limits and with limits (a store may count such claims apart from
// single moves, one note per owner).
func testMaxPendingThroughBatchedClaims(t *testing.T, h Harness) {
	s := h.Store
	pending := map[string]int{}
	for _, owner := range []string{"a", "b", "c"} {
		grant(t, s, owner, 100)
		for range 4 {
			if _, err := s.CreateTask(ctx, newTask(owner, 1), imagegen.CreateParams{}); err != nil {
				t.Fatal(err)
			}
		}
		pending[owner] = 4
	}
	for _, limits := range []imagegen.Limits{{}, {OwnerConcurrency: 10, ModelConcurrency: map[string]int{"test": 10}}} {
		tasks, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: 5, Limits: limits})
		if err != nil || len(tasks) != 5 {
			t.Fatalf("claim 5 with limits %+v: %d tasks, %v", limits, len(tasks), err)
		}
		owners := map[string]bool{}
		for _, c := range tasks {
			pending[c.Owner]--
			owners[c.Owner] = true
		}
		if len(owners) < 2 {
			t.Fatalf("claim 5 of 3 owners' tasks took only %v's", owners)
		}
		for owner, n := range pending {
			if n == 0 { // a cap of 0 is no cap: one of 1 must take a task
				if _, err := s.CreateTask(ctx, newTask(owner, 1), imagegen.CreateParams{MaxPending: 1}); err != nil {
					t.Fatalf("submit capped at 1: %v (some of %s's tasks still counted)", err, owner)
				}
				pending[owner] = 1
				continue
			}
			pending[owner] = pendingIs(t, s, owner, n)
		}
	}
}
