package memory_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

// A refund that would take its owner's balance past math.MaxInt64 (the
// balance granted up to the largest after the charge) is not made, and
// the task is not ended without it: a failure and a cancel are refused
// with nothing changed, and a recovery leaves the task processing, its
// lease a minute longer, as the PostgreSQL and Redis stores do. Once the
// balance can take it, the refund is made. The store used to end the
// task failed and Refunded, report the refund, and drop it: the
// owner's credits were never given back.
func TestRefundThatWouldOverflowEndsNothing(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	clock := imagegentest.NewClock(time.Time{})
	s := testenv.Memory(t, memory.Config{Clock: clock, Retention: time.Hour})
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "rich", Kind: imagegen.LedgerGrant, Amount: 2, Ref: "grant:first"})
	is.NoErr(err)
	task := &imagegen.Task{ID: imagegen.NewOwnedID("rich"), Owner: "rich", Model: "m", Cost: 2,
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "otter"}}
	_, err = s.CreateTask(ctx, task, imagegen.CreateParams{})
	is.NoErr(err)
	top, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "rich", Kind: imagegen.LedgerGrant, Amount: math.MaxInt64, Ref: "grant:top"})
	is.NoErr(err)
	is.Equal(top, int64(math.MaxInt64))
	_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "rich", Kind: imagegen.LedgerGrant, Amount: 1, Ref: "grant:more"})
	is.True(errors.Is(err, imagegen.ErrInvalidParams)) // past the largest balance: the caller's mistake
	c, err := s.ClaimTask(ctx, time.Minute)
	is.NoErr(err)

	_, err = s.FailTask(ctx, task.ID, c.Attempt, imagegen.Failure{Code: imagegen.CodeProviderError, Message: "down"})
	is.True(err != nil && !errors.Is(err, imagegen.ErrLeaseLost))
	_, err = s.CancelTask(ctx, "rich", task.ID)
	is.True(err != nil && !errors.Is(err, imagegen.ErrInvalidTransition))
	clock.Advance(2 * time.Minute)
	rec, err := s.RecoverExpired(ctx, 1)
	is.NoErr(err)
	is.Equal(len(rec.Failed), 0)
	got, err := s.Task(ctx, "rich", task.ID)
	is.NoErr(err)
	is.Equal(got.Status, imagegen.StatusProcessing) // left as it was
	is.True(!got.Refunded)
	is.True(got.LeaseUntil.After(clock.Now())) // tried again a minute on
	checkBalance(t, s, "rich", math.MaxInt64, 3)

	// Once the balance can take it, the refund is made.
	_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "rich", Kind: imagegen.LedgerWeb, Amount: -5, Ref: "web:spend"})
	is.NoErr(err)
	clock.Advance(2 * time.Minute)
	rec, err = s.RecoverExpired(ctx, 1)
	is.NoErr(err)
	is.Equal(len(rec.Failed), 1)
	is.Equal(rec.Failed[0].Refund, int64(2))
	got, err = s.Task(ctx, "rich", task.ID)
	is.NoErr(err)
	is.Equal(got.Status, imagegen.StatusFailed)
	is.True(got.Refunded)
	checkBalance(t, s, "rich", math.MaxInt64-3, 5)
}

// checkBalance checks owner's balance and the number of its ledger
// entries, which must add up to it.
func checkBalance(t *testing.T, s *memory.Store, owner string, want int64, entries int) {
	t.Helper()
	is := is.New(t)
	b, err := s.Balance(context.Background(), owner)
	is.NoErr(err)
	is.Equal(b, want)
	l, err := s.Ledger(context.Background(), owner)
	is.NoErr(err)
	is.Equal(len(l), entries)
	var sum int64
	for _, e := range l {
		sum += e.Amount
	}
	is.Equal(sum, want)
}
