package storetest

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// testEndedLeaseIsNotRenewed: a task counts against the caps until its
// lease ends, so once it has ended another task of the owner and the
// model may take the slot. A renewal by the attempt whose lease ended
// then must not revive it (the owner and the model would run one more
// than their caps): it is refused with ErrLeaseLost and changes
// nothing, from the lease's last instant on. Until recovery takes the
// task back, the attempt may still end it (finish, fail, retry,
// release), which only frees a slot.
func testEndedLeaseIsNotRenewed(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	l := imagegen.Limits{OwnerConcurrency: 1, ModelConcurrency: map[string]int{"m": 1}}
	submitModel(t, h, "a", "m", 6)
	running := func() int {
		t.Helper()
		stats, err := s.SchedulerStats(ctx, imagegen.Limits{})
		is.NoErr(err)
		for _, o := range stats.Busiest {
			if o.Owner == "a" {
				return o.Running
			}
		}
		return 0
	}

	// Each way the lapsed attempt may end its task, then one that
	// walks away (recovery takes it back).
	ends := []struct {
		name string
		end  func(c *imagegen.Task) error
	}{
		{"complete", func(c *imagegen.Task) error { return s.CompleteTask(ctx, c.ID, c.Attempt, nil, nil) }},
		{"fail", func(c *imagegen.Task) error { return errOf(s.FailTask(ctx, c.ID, c.Attempt, fail("late"))) }},
		{"retry", func(c *imagegen.Task) error { return s.RetryTask(ctx, c.ID, c.Attempt, lease, "late") }},
		{"release", func(c *imagegen.Task) error { return s.ReleaseTask(ctx, c.ID, c.Attempt) }},
	}
	first := claimWith(t, s, 2, l)
	is.Equal(len(first), 1)
	cur := first[0]
	for _, e := range ends {
		h.Advance(lease) // the lease's end, to the instant: its slot is free
		next := claimWith(t, s, 2, l)
		if len(next) != 1 {
			t.Fatalf("%s: claimed %d tasks once the lease ended, want 1", e.name, len(next))
		}
		err := s.RenewLease(ctx, cur.ID, cur.Attempt, lease)
		if !errors.Is(err, imagegen.ErrLeaseLost) {
			t.Fatalf("%s: renewal of an ended lease: %v, want ErrLeaseLost", e.name, err)
		}
		if n := running(); n != 1 {
			t.Fatalf("%s: %d of a's tasks running after the late renewal, cap 1", e.name, n)
		}
		if got := claimWith(t, s, 2, l); len(got) != 0 {
			t.Fatalf("%s: claimed %d more beside the running task", e.name, len(got))
		}
		is.NoErr(s.SetProgress(ctx, cur.ID, cur.Attempt, 0.5)) // still its holder
		is.NoErr(e.end(cur))
		is.Equal(recoverNow(t, s, 10).Moved(), 0) // it left processing: nothing to recover
		cur = next[0]
	}
	h.Advance(lease)
	next := claimWith(t, s, 2, l)
	is.Equal(len(next), 1)
	is.True(errors.Is(s.RenewLease(ctx, cur.ID, cur.Attempt, lease), imagegen.ErrLeaseLost))
	is.Equal(recoverNow(t, s, 10).Requeued, 1) // the walked-away task goes back
	is.Equal(running(), 1)
	is.Equal(len(claimWith(t, s, 2, l)), 0)
}
