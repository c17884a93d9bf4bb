package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

func testFencing(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 1)
	task := submit(t, s, "u", 1)
	c := claim(t, s)
	stale := c.Attempt + 1
	is.True(errors.Is(s.FailTask(ctx, task.ID, stale, fail("x")), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.CompleteTask(ctx, task.ID, stale, nil), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.RetryTask(ctx, task.ID, stale, 0, "x"), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.RenewLease(ctx, task.ID, stale, lease), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.RenewLease(ctx, "no-such-task", 1, lease), imagegen.ErrLeaseLost))

	is.NoErr(s.CompleteTask(ctx, task.ID, c.Attempt, []imagegen.Image{image(task.ID + "-img")}))
	done := get(t, s, "u", task.ID)
	is.Equal(done.Status, imagegen.StatusSuccess)
	is.Equal(done.Images, []string{task.ID + "-img"})
	is.True(!done.FinishedAt.IsZero())

	// The holder itself cannot finish twice, nor fail a success.
	is.True(errors.Is(s.CompleteTask(ctx, task.ID, c.Attempt, nil), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.FailTask(ctx, task.ID, c.Attempt, fail("late")), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.RetryTask(ctx, task.ID, c.Attempt, 0, "late"), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.RenewLease(ctx, task.ID, c.Attempt, lease), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.CancelTask(ctx, "u", task.ID), imagegen.ErrInvalidTransition))
	after := get(t, s, "u", task.ID)
	is.Equal(after.Status, imagegen.StatusSuccess)
	is.Equal(after.Error, "")
	is.Equal(balance(t, s, "u"), int64(0)) // a success is not refunded
}

func testLeaseExpiry(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 1)
	task := submit(t, s, "u", 1)
	first := claim(t, s)
	h.Advance(lease / 2)
	rec, err := s.RecoverExpired(ctx, 3)
	is.NoErr(err)
	is.Equal(rec.Moved(), 0)
	_, err = s.ClaimTask(ctx, lease)
	is.True(errors.Is(err, imagegen.ErrNoTask)) // still leased
	h.Advance(lease / 2)
	rec, err = s.RecoverExpired(ctx, 3)
	is.NoErr(err)
	is.Equal(rec.Requeued, 1)
	is.Equal(len(rec.Failed), 0)
	back := get(t, s, "u", task.ID)
	is.Equal(back.Status, imagegen.StatusPending)
	is.Equal(back.Attempt, 1)

	second := claim(t, s)
	is.Equal(second.ID, task.ID)
	is.Equal(second.Attempt, 2)
	// The first worker wakes up: its token is stale.
	is.True(errors.Is(s.CompleteTask(ctx, task.ID, first.Attempt, []imagegen.Image{image("late")}), imagegen.ErrLeaseLost))
	is.NoErr(s.CompleteTask(ctx, task.ID, second.Attempt, []imagegen.Image{image(task.ID + "-img")}))
	done := get(t, s, "u", task.ID)
	is.Equal(done.Status, imagegen.StatusSuccess)
	is.Equal(done.Images, []string{task.ID + "-img"})
	_, err = s.Image(ctx, "late")
	is.True(errors.Is(err, imagegen.ErrImageNotFound))
	is.Equal(balance(t, s, "u"), int64(0))
}

func testLeaseRenewal(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 1)
	task := submit(t, s, "u", 1)
	c := claim(t, s)
	for i := 0; i < 3; i++ {
		h.Advance(lease * 8 / 10)
		is.NoErr(s.RenewLease(ctx, task.ID, c.Attempt, lease))
		rec, err := s.RecoverExpired(ctx, 3)
		is.NoErr(err)
		is.Equal(rec.Moved(), 0)
	}
	is.Equal(get(t, s, "u", task.ID).Status, imagegen.StatusProcessing)
	h.Advance(lease)
	rec, err := s.RecoverExpired(ctx, 3)
	is.NoErr(err)
	is.Equal(rec.Moved(), 1)
}

func testMaxAttempts(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 2)
	task := submit(t, s, "u", 2)
	var rec imagegen.Recovery
	for attempt := 1; attempt <= 2; attempt++ {
		c := claim(t, s)
		is.Equal(c.Attempt, attempt)
		h.Advance(lease)
		var err error
		rec, err = s.RecoverExpired(ctx, 2)
		is.NoErr(err)
		is.Equal(rec.Moved(), 1)
	}
	is.Equal(rec.Requeued, 0) // the last recovery failed it, and says so
	is.Equal(len(rec.Failed), 1)
	is.Equal(rec.Failed[0].ID, task.ID)
	is.Equal(rec.Failed[0].Refund, int64(2))
	failed := get(t, s, "u", task.ID)
	is.Equal(failed.Status, imagegen.StatusFailed)
	is.True(failed.Refunded)
	is.True(strings.TrimSpace(failed.Error) != "")
	is.Equal(failed.ErrorCode, imagegen.CodeInternal)
	is.True(!failed.FinishedAt.IsZero())
	is.Equal(balance(t, s, "u"), int64(2))
	is.Equal(countRefs(checkLedger(t, s, "u"), "refund:"+task.ID), 1)
	_, err := s.ClaimTask(ctx, lease)
	is.True(errors.Is(err, imagegen.ErrNoTask))
}

func testRetry(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 1)
	task := submit(t, s, "u", 1)
	c := claim(t, s)
	is.NoErr(s.RetryTask(ctx, task.ID, c.Attempt, lease, "503 from provider"))
	back := get(t, s, "u", task.ID)
	is.Equal(back.Status, imagegen.StatusPending)
	is.Equal(back.LastError, "503 from provider")
	is.Equal(back.Error, "") // not shown to the user
	_, err := s.ClaimTask(ctx, lease)
	is.True(errors.Is(err, imagegen.ErrNoTask)) // not before its delay
	h.Advance(lease)
	again := claim(t, s)
	is.Equal(again.ID, task.ID)
	is.Equal(again.Attempt, 2)
	is.True(errors.Is(s.CompleteTask(ctx, task.ID, c.Attempt, nil), imagegen.ErrLeaseLost))
	is.Equal(balance(t, s, "u"), int64(0))
}
