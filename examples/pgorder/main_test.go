package main

import (
	"context"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
)

func TestOrderAndCreditsCommitOrRollBackTogether(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s, err := openShop(ctx, pool, pgtest.Schema(t, pool))
	is.NoErr(err)
	defer s.store.Close()
	orders := func() int {
		var n int
		is.NoErr(pool.QueryRow(ctx, `SELECT count(*) FROM `+s.table).Scan(&n))
		return n
	}

	res, err := s.buyCredits(ctx, "alice", "order-1", 10, 500)
	is.NoErr(err)
	is.Equal(res.Balance, int64(10))
	is.Equal(orders(), 1)
	res, err = s.buyCredits(ctx, "alice", "order-1", 10, 500) // a retried payment callback
	is.NoErr(err)
	is.True(res.AlreadyApplied)
	is.Equal(res.Balance, int64(10))
	is.Equal(orders(), 1)

	// The order row fails (a negative payment breaks its CHECK): the
	// grant made before it in the same transaction is rolled back too.
	_, err = s.buyCredits(ctx, "alice", "order-2", 10, -1)
	is.True(err != nil)
	b, err := s.svc.Balance(ctx, "alice")
	is.NoErr(err)
	is.Equal(b, int64(10))
	is.Equal(orders(), 1)
	ledger, err := s.svc.Ledger(ctx, "alice")
	is.NoErr(err)
	is.Equal(len(ledger), 1)

	// A poster order and its generation commit together, and the task runs.
	sub, err := s.orderPoster(ctx, "alice", "poster-1", "a lighthouse")
	is.NoErr(err)
	is.Equal(orders(), 2)
	ran, err := s.svc.RunOnce(ctx)
	is.NoErr(err)
	is.True(ran)
	task, err := s.svc.Task(ctx, "alice", sub.TaskID)
	is.NoErr(err)
	is.Equal(task.Status, imagegen.StatusSuccess)

	// The same poster order id again: the order row fails, so the task
	// and its charge are rolled back with it.
	before, err := s.svc.Balance(ctx, "alice")
	is.NoErr(err)
	_, err = s.orderPoster(ctx, "alice", "poster-1", "a lighthouse")
	is.True(err != nil)
	after, err := s.svc.Balance(ctx, "alice")
	is.NoErr(err)
	is.Equal(after, before)
	ran, err = s.svc.RunOnce(ctx)
	is.NoErr(err)
	is.True(!ran) // no task was left behind

	// Too few credits: nothing is ordered.
	_, err = s.orderPoster(ctx, "bob", "poster-2", "a lighthouse")
	is.True(errors.Is(err, imagegen.ErrInsufficientCredits))
	is.Equal(orders(), 2)
}
