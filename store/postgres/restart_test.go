package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// PgBouncer killed and started again under a running store (every client
// and server connection cut, a host transaction open): the open
// transaction is lost whole, the first call on a stale pooled connection
// fails and empties the pool, so that the next calls (on new
// connections) succeed though the pool held several stale ones, a call
// that failed charged nothing and created nothing, and the lease of a
// task claimed before the cut is recovered as usual.
func TestStoreThroughPgBouncerRestart(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	p := pgtest.ConnectPooled(t)
	clock := imagegentest.NewClock(time.Time{})
	s := p.NewStore(t, postgres.Config{Clock: clock, Retention: time.Hour, SweepInterval: -1})
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 100, Ref: "g"})
	is.NoErr(err)
	for _, id := range []string{"t1", "t2"} {
		_, err := s.CreateTask(ctx, newTask(id, "u"), imagegen.CreateParams{})
		is.NoErr(err)
	}
	claimed, err := s.ClaimTask(ctx, time.Minute)
	is.NoErr(err)
	tx, err := p.Pool.Begin(ctx)
	is.NoErr(err)
	_, err = s.GrantTx(ctx, tx, "u", 50, "g2")
	is.NoErr(err)

	pgtest.FillIdle(t, p.Pool, 4) // several connections in the pool, all of them cut by the restart

	p.Bouncer.Restart()

	is.True(tx.Commit(ctx) != nil) // the cut transaction is not committed
	failed, created := 0, 0
	for i := range 20 {
		id := fmt.Sprint("a", i)
		if _, err := s.CreateTask(ctx, newTask(id, "u"), imagegen.CreateParams{}); err != nil {
			t.Logf("submit %d: %v", i, err)
			failed++
			_, err := s.Task(ctx, "u", id)
			is.True(errors.Is(err, imagegen.ErrTaskNotFound)) // a failed submit created nothing
			continue
		}
		created++
	}
	t.Logf("%d of 20 submits failed on stale connections", failed)
	is.True(failed <= 1) // the first stale connection's call; then the pool is new
	is.Equal(created, 20-failed)
	bal, err := s.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(bal, int64(100-2-created)) // neither the cut grant nor a failed submit counted

	clock.Advance(2 * time.Minute)
	rec, err := s.RecoverExpired(ctx, 3)
	is.NoErr(err)
	is.Equal(rec.Requeued, 1)
	back, err := s.Task(ctx, "u", claimed.ID)
	is.NoErr(err)
	is.Equal(back.Status, imagegen.StatusPending) // back in the queue, its attempt counted
	is.Equal(back.Attempt, claimed.Attempt)
}

// A worker's calls on its leases (renew, progress, success, failure,
// retry, release) that find their connection broken empty the pool as
// every other call does: after a PgBouncer restart under a worker whose
// slots are all busy, only the first of them fails, not one for each
// stale pooled connection in turn (a lost success costs the task a
// whole generation again once its lease runs out).
func TestLeaseCallsThroughPgBouncerRestart(t *testing.T) {
	p := pgtest.ConnectPooled(t)
	img := func(id string) []imagegen.Image {
		return []imagegen.Image{{ID: id + "-img", TaskID: id, Owner: "u", ContentType: "image/png", Size: 1}}
	}
	for _, c := range []struct {
		name string
		call func(ctx context.Context, s *postgres.Store, task *imagegen.Task) error
	}{
		{"renew", func(ctx context.Context, s *postgres.Store, task *imagegen.Task) error {
			return s.RenewLease(ctx, task.ID, task.Attempt, time.Minute)
		}},
		{"progress", func(ctx context.Context, s *postgres.Store, task *imagegen.Task) error {
			return s.SetProgress(ctx, task.ID, task.Attempt, 0.5)
		}},
		{"complete", func(ctx context.Context, s *postgres.Store, task *imagegen.Task) error {
			return s.CompleteTask(ctx, task.ID, task.Attempt, img(task.ID), nil)
		}},
		{"complete with bytes", func(ctx context.Context, s *postgres.Store, task *imagegen.Task) error {
			_, err := s.CompleteTaskWithBytes(ctx, task.ID, task.Attempt, img(task.ID), [][]byte{{1}}, nil)
			return err
		}},
		{"fail", func(ctx context.Context, s *postgres.Store, task *imagegen.Task) error {
			_, err := s.FailTask(ctx, task.ID, task.Attempt, imagegen.Failure{Code: imagegen.CodeInternal, Message: "m"})
			return err
		}},
		{"retry", func(ctx context.Context, s *postgres.Store, task *imagegen.Task) error {
			return s.RetryTask(ctx, task.ID, task.Attempt, time.Minute, "e")
		}},
		{"release", func(ctx context.Context, s *postgres.Store, task *imagegen.Task) error {
			return s.ReleaseTask(ctx, task.ID, task.Attempt)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			ctx := context.Background()
			s := p.NewStore(t, postgres.Config{Retention: time.Hour, SweepInterval: -1})
			_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 100, Ref: "g"})
			is.NoErr(err)
			const n = 20
			for i := range n {
				_, err := s.CreateTask(ctx, newTask(fmt.Sprint("t", i), "u"), imagegen.CreateParams{})
				is.NoErr(err)
			}
			claimed, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: n})
			is.NoErr(err)
			is.Equal(len(claimed), n)

			pgtest.FillIdle(t, p.Pool, 4) // several connections in the pool, all of them cut by the restart
			p.Bouncer.Restart()

			failed := 0
			for _, task := range claimed {
				if err := c.call(ctx, s, task); err != nil {
					t.Logf("%s %s: %v", c.name, task.ID, err)
					is.True(!errors.Is(err, imagegen.ErrLeaseLost)) // a broken connection, not a lease lost
					failed++
				}
			}
			is.True(failed <= 1) // the first stale connection's call; then the pool is new
		})
	}
}
