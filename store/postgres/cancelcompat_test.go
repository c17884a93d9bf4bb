package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// Processes of version 31 keep cancelling as they did while a deployment
// rolls: on the latest schema, and on the schema migrated back down to
// 31, their cancel_task_refund refunds a running task in full; up again,
// the store's CancelTask keeps a started charge when asked to.
func TestVersion31CancelsRefundARunningTask(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 3, Ref: "g"})
	is.NoErr(err)
	running := func(id string) {
		t.Helper()
		_, err := s.CreateTask(ctx, newTask(id, "u"), imagegen.CreateParams{})
		is.NoErr(err)
		c, err := s.ClaimTask(ctx, time.Minute)
		is.NoErr(err)
		is.Equal(c.ID, id)
	}
	cancel31 := func(id string) int64 { // as version 31's CancelTask called it
		t.Helper()
		var n int64
		is.NoErr(pool.QueryRow(ctx, fmt.Sprintf(`SELECT %s.cancel_task_refund('u', $1, 'cancelled', 'cancelled', now(),
			interval '1 hour', 'imagegen_test_finished')`, schema), id).Scan(&n))
		return n
	}
	balance := func() int64 {
		t.Helper()
		b, err := s.Balance(ctx, "u")
		is.NoErr(err)
		return b
	}

	running("t1")
	is.Equal(cancel31("t1"), int64(1)) // on the latest schema
	is.Equal(balance(), int64(3))

	is.NoErr(postgres.MigrateTo(ctx, pool, s.Schema(), 31))
	running("t2")
	is.Equal(cancel31("t2"), int64(1)) // on version 31's schema
	is.Equal(balance(), int64(3))

	is.NoErr(postgres.Migrate(ctx, pool, s.Schema()))
	running("t3")
	refund, err := s.CancelTask(ctx, "u", "t3", imagegen.CancelParams{KeepStartedCharge: true})
	is.NoErr(err)
	is.Equal(refund, int64(0))
	is.Equal(balance(), int64(2))
}
