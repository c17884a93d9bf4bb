package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// A claimed task whose stored request does not decode must not cost the
// tasks claimed with it their claim: the claim's statement has leased
// them all, so dropping the batch left the good ones leased to no one
// until their leases ran out (an attempt used up each time). The good
// tasks are returned; the bad one is failed (CodeInternal) and refunded,
// reported in an *imagegen.UnreadableTasksError, and not claimed again.
func TestClaimWithAnUnreadableTaskReturnsTheOthers(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, pool := storeWithUnreadable(ctx, t)
	schema := pgx.Identifier{s.Schema()}.Sanitize()

	tasks, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 10})
	var ids []string
	for _, task := range tasks {
		ids = append(ids, task.ID)
		is.Equal(task.Status, imagegen.StatusProcessing)
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
	is.True(bad.Failed) // failed at once, through FailTask
	is.NoErr(bad.FailErr)
	is.Equal(bad.Refund, int64(1))

	var status, code string
	is.NoErr(pool.QueryRow(ctx, fmt.Sprintf(`SELECT status, error_code FROM %s.tasks WHERE id = 't2'`, schema)).Scan(&status, &code))
	is.Equal(status, string(imagegen.StatusFailed))
	is.Equal(code, string(imagegen.CodeInternal))
	balance, err := s.Balance(ctx, "a")
	is.NoErr(err)
	is.Equal(balance, int64(10-3+1)) // t2 refunded

	_, err = s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 10})
	is.True(errors.Is(err, imagegen.ErrNoTask)) // the bad task is not claimed again
	for _, task := range tasks {                // the good ones are held by their claim
		is.NoErr(s.CompleteTask(ctx, task.ID, task.Attempt, nil, nil))
	}
}

// storeWithUnreadable is a new store holding owner a's pending tasks t1,
// t2 and t3, t2's request written over with JSON that is no
// imagegen.Request, and the pool it was made on.
func storeWithUnreadable(ctx context.Context, t *testing.T) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	is := is.New(t)
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "a", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"})
	is.NoErr(err)
	for _, id := range []string{"t1", "t2", "t3"} {
		_, err := s.CreateTask(ctx, newTask(id, "a"), imagegen.CreateParams{})
		is.NoErr(err)
	}
	// Valid JSON (the column is jsonb) that is no imagegen.Request.
	_, err = pool.Exec(ctx, fmt.Sprintf(`UPDATE %s.tasks SET request = '{"scene": 5}' WHERE id = 't2'`, schema))
	is.NoErr(err)
	return s, pool
}
