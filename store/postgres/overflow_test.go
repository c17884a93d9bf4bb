package postgres_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// An owner whose balance a refund would overflow (granted up to the
// largest balance after a charge) strands nobody else's expired lease:
// recovery fails and refunds every other owner's task of its batch, and
// leaves that one task processing, its lease a minute longer, with no
// credit moved, to try again later.
func TestRecoveryWithARefundThatOverflowsStrandsNoOtherTask(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	clock := imagegentest.NewClock(time.Time{})
	s := pgtest.NewStore(t, pgtest.Connect(t), postgres.Config{Clock: clock, Retention: retention, SweepInterval: -1})
	for _, owner := range []string{"a", "rich", "z"} {
		_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"})
		is.NoErr(err)
		_, err = s.CreateTask(ctx, newTask("t-"+owner, owner), imagegen.CreateParams{})
		is.NoErr(err)
	}
	// rich's balance at the most it can hold, after its charge.
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "rich", Kind: imagegen.LedgerGrant, Amount: math.MaxInt64 - 9, Ref: "top"})
	is.NoErr(err)
	claimed, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 3})
	is.NoErr(err)
	is.Equal(len(claimed), 3)
	clock.Advance(2 * time.Minute)

	rec, err := s.RecoverExpired(ctx, 1)
	is.NoErr(err) // one owner's refund must not fail the others' recovery
	is.Equal(len(rec.Failed), 2)
	for _, owner := range []string{"a", "z"} {
		task, err := s.Task(ctx, owner, "t-"+owner)
		is.NoErr(err)
		is.Equal(task.Status, imagegen.StatusFailed)
		bal, err := s.Balance(ctx, owner)
		is.NoErr(err)
		is.Equal(bal, int64(10)) // refunded
	}
	task, err := s.Task(ctx, "rich", "t-rich")
	is.NoErr(err)
	is.Equal(task.Status, imagegen.StatusProcessing) // left as it was, tried again later
	is.True(task.LeaseUntil.After(clock.Now()))
	bal, err := s.Balance(ctx, "rich")
	is.NoErr(err)
	is.Equal(bal, int64(math.MaxInt64))
	ledger, err := s.Ledger(ctx, "rich")
	is.NoErr(err)
	is.Equal(len(ledger), 3) // grant, charge, grant: no refund entry

	// Once the balance can take it, the refund is made.
	_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "rich", Kind: imagegen.LedgerWeb, Amount: -5, Ref: "spend"})
	is.NoErr(err)
	clock.Advance(2 * time.Minute)
	rec, err = s.RecoverExpired(ctx, 1)
	is.NoErr(err)
	is.Equal(len(rec.Failed), 1)
	is.Equal(rec.Failed[0].Refund, int64(1))
	task, err = s.Task(ctx, "rich", "t-rich")
	is.NoErr(err)
	is.Equal(task.Status, imagegen.StatusFailed)
	bal, err = s.Balance(ctx, "rich")
	is.NoErr(err)
	is.Equal(bal, int64(math.MaxInt64-4))
}
