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
