package storetest

import (
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

// testOwnerAtCapHoldsNoOneBack: an owner at its cap whose backlog of
// one model falls behind the tags now served (its running task is slow,
// another owner's are fast) does not hold back another owner's tasks of
// the same model: however many of its tasks lie at the head of the
// model's queue, a claim takes the other owner's next task.
func testOwnerAtCapHoldsNoOneBack(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	l := imagegen.Limits{OwnerConcurrency: 1}
	submitModel(t, h, "a", "m", heldBacklog)
	got := claimWith(t, s, 1, l)
	is.Equal(len(got), 1)
	is.Equal(got[0].Owner, "a") // a's slow task holds its one slot throughout
	others := submitModel(t, h, "b", "m", heldBacklog)
	for i, id := range others {
		got := claimWith(t, s, 1, l)
		if len(got) != 1 {
			t.Fatalf("claim %d of b's %d: a's backlog at its cap held b's ready task back", i+1, len(others))
		}
		is.Equal(got[0].ID, id)
		is.NoErr(errOf(s.FailTask(ctx, got[0].ID, got[0].Attempt, fail("done")))) // its slot is free again
	}
}
