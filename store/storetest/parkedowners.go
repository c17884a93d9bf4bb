package storetest

import (
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

// The cases here follow the tasks of an owner at its cap that a claim
// passed over (a store may park them apart from the model's queue until
// the owner has a free slot): they keep their place in the claim order,
// and everything a pending task may do they still may.

// capOfOne is the owner cap of these cases.
var capOfOne = imagegen.Limits{OwnerConcurrency: 1}

// passedOver starts one task of a's, which holds a's one slot, and
// queues n more of model "m" behind it, which a claim under capOfOne
// then passes over (finding nothing else). It returns the running task
// and the backlog's ids, oldest first.
func passedOver(t *testing.T, h Harness, n int) (*imagegen.Task, []string) {
	t.Helper()
	submitModel(t, h, "a", "m", 1)
	running := claimWith(t, h.Store, 1, capOfOne)
	if len(running) != 1 {
		t.Fatalf("the first claim took %d tasks, want a's first", len(running))
	}
	backlog := submitModel(t, h, "a", "m", n)
	if got := claimWith(t, h.Store, 1, capOfOne); len(got) != 0 {
		t.Fatalf("a claim with a at its cap took %v", owners(got))
	}
	return running[0], backlog
}

// claimIDs claims up to n tasks under l and returns their ids in order.
func claimIDs(t *testing.T, s imagegen.Store, n int, l imagegen.Limits) []string {
	t.Helper()
	var ids []string
	for _, task := range claimWith(t, s, n, l) {
		ids = append(ids, task.ID)
	}
	return ids
}

// done completes task.
func done(t *testing.T, s imagegen.Store, task *imagegen.Task) {
	t.Helper()
	if err := s.CompleteTask(ctx, task.ID, task.Attempt, nil, nil); err != nil {
		t.Fatalf("complete %s: %v", task.ID, err)
	}
}

// testPassedOverOwnerResumesOldestFirst: an owner's backlog that claims
// passed over while the owner was at its cap, fallen behind the tags now
// served, is claimed as soon as a slot frees, its oldest task first and
// before another owner's later tags.
func testPassedOverOwnerResumesOldestFirst(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	running, a := passedOver(t, h, 3)
	b := submitModel(t, h, "b", "m", 3)
	for _, want := range b[:2] { // b's tags pass a's oldest
		got := claimWith(t, s, 2, capOfOne) // a is still at its cap
		is.Equal(len(got), 1)
		is.Equal(got[0].ID, want)
		done(t, s, got[0])
	}
	done(t, s, running) // a's slot frees
	got := claimWith(t, s, 1, capOfOne)
	is.Equal(len(got), 1)
	is.Equal(got[0].ID, a[0]) // a's oldest, whose tag is before b's next
	is.Equal(claimIDs(t, s, 2, capOfOne), []string{b[2]})
	done(t, s, got[0])
	is.Equal(claimIDs(t, s, 2, capOfOne), []string{a[1]})
}

// testPassedOverOwnerKeepsItsOrder: an owner's tasks start oldest first,
// whether a claim passed them over while the owner was at its cap or
// they were queued after.
func testPassedOverOwnerKeepsItsOrder(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	running, a := passedOver(t, h, 3)
	a = append(a, submitModel(t, h, "a", "m", 2)...)
	is.Equal(len(claimWith(t, s, 1, capOfOne)), 0) // passes over a's later tasks too
	a = append(a, submitModel(t, h, "a", "m", 1)...)
	for i := 0; i < len(a); i++ {
		done(t, s, running)
		got := claimWith(t, s, 4, capOfOne)
		if len(got) != 1 || got[0].ID != a[i] {
			t.Fatalf("claim %d after a's slot freed: %v, want only a's task %d", i+1, got, i+1)
		}
		running = got[0]
		if i == 0 {
			a = append(a, submitModel(t, h, "a", "m", 1)...) // queued while a runs one
		}
	}
}

// testPassedOverTaskCancelled: a task that a claim passed over is
// cancelled like any pending task: refunded, gone from the queue, and
// never claimed.
func testPassedOverTaskCancelled(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	running, a := passedOver(t, h, 3)
	before := balance(t, s, "a")
	after, err := s.CancelTask(ctx, "a", a[1], imagegen.CancelParams{})
	is.NoErr(err)
	is.Equal(after, before+1) // refunded
	is.Equal(balance(t, s, "a"), before+1)
	getFailed(t, s, "a", a[1], imagegen.CodeCancelled)
	positions, err := s.QueuePositions(ctx, a)
	is.NoErr(err)
	is.Equal(positions, []int{0, -1, 1})
	is.Equal(len(claimWith(t, s, 4, capOfOne)), 0)
	done(t, s, running)
	is.Equal(claimIDs(t, s, 4, imagegen.Limits{}), []string{a[0], a[2]})
}

// testPassedOverTasksInPlace: the tasks a claim passed over keep their
// places in the queue among other owners' (QueuePositions), the
// scheduler's stats count them held by the owner's cap, and a claim
// with no owner cap takes them in that order.
func testPassedOverTasksInPlace(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	_, a := passedOver(t, h, 3)
	b := submitModel(t, h, "b", "m", 3)
	first := claimWith(t, s, 1, capOfOne)
	is.Equal(len(first), 1)
	is.Equal(first[0].ID, b[0])
	done(t, s, first[0]) // b is not at its cap
	// a's tags are 2, 3 and 4 strides, b's left 3 and 4; a's were
	// queued first.
	order := []string{a[0], a[1], b[1], a[2], b[2]}
	positions, err := s.QueuePositions(ctx, order)
	is.NoErr(err)
	is.Equal(positions, []int{0, 1, 2, 3, 4})
	stats, err := s.SchedulerStats(ctx, capOfOne)
	is.NoErr(err)
	is.Equal(stats.Held[imagegen.HeldOwnerCap], 3) // a's
	is.Equal(claimIDs(t, s, 10, imagegen.Limits{}), order)
}
