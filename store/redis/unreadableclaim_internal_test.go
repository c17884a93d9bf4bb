package redis

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// A claimed task whose stored request does not decode must not cost the
// tasks claimed with it their claim: claimScript has leased them all, so
// dropping the batch left the good ones leased to no one until their
// leases ran out (an attempt used up each time). The good tasks are
// returned; the bad one is failed (CodeInternal) and refunded, reported
// in an *imagegen.UnreadableTasksError, and not claimed again.
func TestClaimWithAnUnreadableTaskReturnsTheOthers(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		is := is.New(t)
		ctx := context.Background()
		createWithUnreadable(ctx, t, s)

		tasks, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 10})
		var ids []string
		for _, task := range tasks {
			ids = append(ids, task.ID)
			is.Equal(task.Status, imagegen.StatusProcessing)
			is.Equal(task.Attempt, 1)
		}
		slices.Sort(ids)
		is.Equal(ids, []string{"t1", "t3"})                 // the good tasks, claimed
		is.True(errors.Is(err, imagegen.ErrUnreadableTask)) // reported, not swallowed

		var unreadable *imagegen.UnreadableTasksError
		is.True(errors.As(err, &unreadable))
		is.Equal(len(unreadable.Tasks), 1)
		bad := unreadable.Tasks[0]
		is.Equal(bad.ID, "t2")
		is.Equal(bad.Model, "m")
		is.Equal(bad.Attempt, 1)
		is.True(bad.Err != nil)
		is.True(bad.Failed) // failed at once, through FailTask
		is.NoErr(bad.FailErr)
		is.Equal(bad.Refund, int64(1))

		f, err := s.rdb.HMGet(ctx, s.byID("t2").task("t2"), "status", "error_code").Result()
		is.NoErr(err)
		is.Equal(f, []any{string(imagegen.StatusFailed), string(imagegen.CodeInternal)})
		balance, err := s.Balance(ctx, "a")
		is.NoErr(err)
		is.Equal(balance, int64(10-3+1)) // t2 refunded

		_, err = s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 10})
		is.True(errors.Is(err, imagegen.ErrNoTask)) // the bad task is not claimed again
		for _, task := range tasks {                // the good ones are held by their claim
			is.NoErr(s.CompleteTask(ctx, task.ID, task.Attempt, nil, nil))
		}
	})
}

// createWithUnreadable creates owner a's pending tasks t1, t2 and t3 in
// s, then writes over t2's request with bytes that do not decode.
func createWithUnreadable(ctx context.Context, t *testing.T, s *Store) {
	t.Helper()
	is := is.New(t)
	for _, id := range []string{"t1", "t2", "t3"} {
		task := &imagegen.Task{ID: id, Owner: "a", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 1}
		_, err := s.CreateTask(ctx, task, imagegen.CreateParams{})
		is.NoErr(err)
	}
	is.NoErr(s.rdb.HSet(ctx, s.byID("t2").task("t2"), "req", "{not json").Err()) // corrupted in Redis
}
