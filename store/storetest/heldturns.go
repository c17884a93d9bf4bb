package storetest

import (
	"slices"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

// testHeldModelNewcomerWaitsOneTurn: while a model is held back (kind:
// paused, at its cap, or waiting for its rate), other models' claims
// move the store's virtual time far past the tags of the held backlog.
// An owner's first task in the held model must still wait behind at
// most one turn of the owners queued there once the hold ends, not
// behind their whole backlog (docs/scheduling.md, bounded wait), and
// the backlog keeps its order. Two of the other models' tasks are left
// running, since PostgreSQL's virtual time follows the running tasks.
func testHeldModelNewcomerWaitsOneTurn(kind string) func(*testing.T, Harness) {
	return func(t *testing.T, h Harness) {
		is := is.New(t)
		s, c := h.Store, heldModels[kind]
		const backlogLen, busyLen = 20, 20
		backlog := submitModel(t, h, "a", "slow", backlogLen)
		c.hold(t, h, c.l)
		submitModel(t, h, "b", "fast", busyLen)
		submitModel(t, h, "c", "fast", busyLen)
		var ran []*imagegen.Task
		for range 2 * busyLen {
			got := claimWith(t, s, 1, c.l)
			is.Equal(len(got), 1)
			is.Equal(got[0].Model, "fast") // "slow" is held
			ran = append(ran, got[0])
		}
		for _, task := range ran[:len(ran)-2] {
			is.NoErr(s.CompleteTask(ctx, task.ID, task.Attempt, nil, nil))
		}
		d := submitModel(t, h, "d", "slow", 1)

		// The hold ends; "slow" runs one task at a time, each ended
		// before the next is claimed and the hold's time passed after
		// it (a cap's slot, a rate's next start).
		var order []string
		for range 3 {
			h.Advance(c.end)
			got := claimWith(t, s, 1, c.l)
			if len(got) != 1 || got[0].Model != "slow" {
				t.Fatalf("after the hold: claimed %d tasks (%v), want one of \"slow\"", len(got), owners(got))
			}
			order = append(order, got[0].ID)
			is.NoErr(s.CompleteTask(ctx, got[0].ID, got[0].Attempt, nil, nil))
		}
		at := slices.Index(order, d[0])
		if at < 0 || at > 1 {
			t.Fatalf("the newcomer's first task was not within one turn of the held backlog: claimed %v, newcomer %s", order, d[0])
		}
		is.Equal(slices.DeleteFunc(order, func(id string) bool { return id == d[0] }), backlog[c.ran:c.ran+2]) // the backlog kept its order
	}
}
