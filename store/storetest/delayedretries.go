package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

// testDelayedRetriesHoldNoOneBack: more retries of a model waiting out
// their delay than a claim's look-ahead (a provider that failed for a
// minute), at the head of the model's queue, do not hold back a newer
// task of the same model: a claim takes it at once. While they wait
// they are pending tasks like any other: counted in their places
// (QueuePositions), in the owner's pending count (SchedulerStats,
// QueueStats), cancelled like any. Once their delay has passed they
// start at their tags' places: before the newer tasks, in their order.
func testDelayedRetriesHoldNoOneBack(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	retries := submitModel(t, h, "a", "m", heldBacklog)
	for _, id := range retries {
		task := claim(t, s)
		is.Equal(task.ID, id)
		is.NoErr(s.RetryTask(ctx, task.ID, task.Attempt, time.Minute, "provider unavailable"))
	}
	newer := submitModel(t, h, "a", "m", 2) // tagged behind a's retries
	got := claimWith(t, s, 1, imagegen.Limits{})
	if len(got) != 1 {
		t.Fatalf("a claim took %d tasks: %d retries waiting out their delay held back the newer task behind them", len(got), len(retries))
	}
	is.Equal(got[0].ID, newer[0])

	// The retries waiting are pending tasks in their places.
	positions, err := s.QueuePositions(ctx, []string{retries[0], retries[1], retries[len(retries)-1], newer[1]})
	is.NoErr(err)
	is.Equal(positions, []int{0, 1, len(retries) - 1, len(retries)})
	stats, err := s.SchedulerStats(ctx, imagegen.Limits{})
	is.NoErr(err)
	is.True(len(stats.Busiest) > 0)
	is.Equal(stats.Busiest[0], imagegen.OwnerLoad{Owner: "a", Pending: len(retries) + 1, Running: 1})
	qs, err := s.QueueStats(ctx)
	is.NoErr(err)
	is.Equal(qs.Pending, int64(len(retries)+1))
	before := balance(t, s, "a")
	after, err := s.CancelTask(ctx, "a", retries[1], imagegen.CancelParams{})
	is.NoErr(err)
	is.Equal(after, before+1) // refunded
	getFailed(t, s, "a", retries[1], imagegen.CodeCancelled)
	positions, err = s.QueuePositions(ctx, []string{retries[0], retries[1], retries[2], newer[1]})
	is.NoErr(err)
	is.Equal(positions, []int{0, -1, 1, len(retries) - 1})

	is.Equal(claimIDs(t, s, 8, imagegen.Limits{}), []string{newer[1]}) // the retries still wait

	// Their delay over, the retries go first, in their order, then the
	// tasks queued after them.
	h.Advance(time.Minute)
	later := submitModel(t, h, "a", "m", 1)
	want := append(append(slices.Clone(retries[:1]), retries[2:]...), later...)
	var order []string
	for range len(want) {
		ids := claimIDs(t, s, 16, imagegen.Limits{})
		if len(ids) == 0 {
			break
		}
		order = append(order, ids...)
	}
	is.Equal(order, want)
}
