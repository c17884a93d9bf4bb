package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

func testRefundOnce(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	task, c := startTask(t, s, "u", 3)

	// Many goroutines race to fail the same attempt: one wins.
	const racers = 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			refund, err := s.FailTask(ctx, task.ID, c.Attempt, fail("provider down"))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
				if refund != 3 {
					t.Errorf("the winning FailTask reports a refund of %d, want the cost, 3", refund)
				}
			case !errors.Is(err, imagegen.ErrLeaseLost):
				t.Errorf("fail task: %v", err)
			}
		}()
	}
	wg.Wait()
	is.Equal(wins, 1)
	is.Equal(recoverAfterLease(t, h, 1).Moved(), 0) // a failed task holds no lease
	is.True(errors.Is(errOf(s.CancelTask(ctx, "u", task.ID, imagegen.CancelParams{})), imagegen.ErrInvalidTransition))

	failed := getFailed(t, s, "u", task.ID, imagegen.CodeProviderError)
	is.Equal(failed.Error, "provider down")
	is.True(failed.Refunded)
	is.Equal(balance(t, s, "u"), int64(3))
	entries := checkLedger(t, s, "u")
	is.Equal(countRefs(entries, "refund:"+task.ID), 1)
	is.Equal(entries[len(entries)-1].Kind, imagegen.LedgerRefund)
}

func testCancel(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 3)
	pending := submit(t, s, "u", 1)
	running := submit(t, s, "u", 1)
	done := submit(t, s, "u", 1)
	refund, err := s.CancelTask(ctx, "u", pending.ID, imagegen.CancelParams{})
	is.NoErr(err)
	is.Equal(refund, int64(1)) // the cost, given back
	got := getFailed(t, s, "u", pending.ID, imagegen.CodeCancelled)
	is.Equal(got.Error, imagegen.CancelledMessage)
	is.True(got.Refunded)
	is.Equal(balance(t, s, "u"), int64(1))

	// The cancelled task is never handed out.
	c := claim(t, s)
	is.Equal(c.ID, running.ID)
	c2 := claim(t, s)
	is.Equal(c2.ID, done.ID)
	is.NoErr(s.CompleteTask(ctx, done.ID, c2.Attempt, nil, nil))

	// A processing task is cancelled too, and its worker loses the lease.
	is.NoErr(errOf(s.CancelTask(ctx, "u", running.ID, imagegen.CancelParams{})))
	getFailed(t, s, "u", running.ID, imagegen.CodeCancelled)
	is.True(errors.Is(s.RenewLease(ctx, running.ID, c.Attempt, lease), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.CompleteTask(ctx, running.ID, c.Attempt, nil, nil), imagegen.ErrLeaseLost))
	is.Equal(recoverAfterLease(t, h, 3).Moved(), 0) // it holds no lease any more
	is.Equal(balance(t, s, "u"), int64(2))

	// Finished tasks stay as they are.
	for _, id := range []string{pending.ID, running.ID, done.ID} {
		is.True(errors.Is(errOf(s.CancelTask(ctx, "u", id, imagegen.CancelParams{})), imagegen.ErrInvalidTransition))
	}
	is.Equal(get(t, s, "u", done.ID).Status, imagegen.StatusSuccess)
	_, err = s.ClaimTask(ctx, lease)
	is.True(errors.Is(err, imagegen.ErrNoTask))
	entries := checkLedger(t, s, "u")
	is.Equal(countRefs(entries, "refund:"+pending.ID), 1)
	is.Equal(countRefs(entries, "refund:"+running.ID), 1)
	is.Equal(countRefs(entries, "refund:"+done.ID), 0)
}
