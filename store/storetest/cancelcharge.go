package storetest

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// cancelChargeCost is what each task of testCancelKeepsAStartedCharge
// costs: not 1, so that a refund of the wrong task's cost shows.
const cancelChargeCost = 3

// cancelChargeCase is one task brought to a state before its cancel: it
// returns the task's id and the attempt its last worker held (0: none).
type cancelChargeCase struct {
	name    string
	prepare func(t *testing.T, h Harness) (id string, attempt int)
	keep    bool  // CancelParams.KeepStartedCharge
	refund  int64 // what the cancel gives back
}

// testCancelKeepsAStartedCharge checks CancelParams.KeepStartedCharge: a
// cancel with it keeps the charge of a processing task (a worker had
// claimed it: its generation had begun), and refunds any pending one in
// full, whatever claims it had before; without it every cancel refunds.
// Either way the task fails as cancelled and its worker's lease ends.
func testCancelKeepsAStartedCharge(t *testing.T, h Harness) {
	running := func(t *testing.T, h Harness) (string, int) {
		task, c := startTask(t, h.Store, "u", cancelChargeCost)
		return task.ID, c.Attempt
	}
	for _, tc := range []cancelChargeCase{
		{name: "RunningKeepsItsCharge", prepare: running, keep: true, refund: 0},
		{name: "RunningRefundedWithoutTheFlag", prepare: running, keep: false, refund: cancelChargeCost},
		{name: "PendingRefunded", keep: true, refund: cancelChargeCost,
			prepare: func(t *testing.T, h Harness) (string, int) {
				return submitFunded(t, h.Store, "u", cancelChargeCost).ID, 0
			}},
		{name: "RecoveredAfterItsLeaseRefunded", keep: true, refund: cancelChargeCost,
			prepare: func(t *testing.T, h Harness) (string, int) {
				id, attempt := running(t, h)
				if rec := recoverAfterLease(t, h, 3); rec.Requeued != 1 {
					t.Fatalf("recovery requeued %d tasks, want the one whose lease ran out", rec.Requeued)
				}
				return id, attempt
			}},
		{name: "ReleasedRefunded", keep: true, refund: cancelChargeCost,
			prepare: func(t *testing.T, h Harness) (string, int) {
				id, attempt := running(t, h)
				if err := h.Store.ReleaseTask(ctx, id, attempt); err != nil {
					t.Fatalf("release: %v", err)
				}
				return id, attempt
			}},
		{name: "WaitingForADelayedRetryRefunded", keep: true, refund: cancelChargeCost,
			prepare: func(t *testing.T, h Harness) (string, int) {
				id, attempt := running(t, h)
				if err := h.Store.RetryTask(ctx, id, attempt, lease, "503 from provider"); err != nil {
					t.Fatalf("retry: %v", err)
				}
				return id, attempt
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkCancelCharge(t, h, tc)
		})
	}
}

// checkCancelCharge runs one case of testCancelKeepsAStartedCharge. The
// cases share one store, and so owner "u": the balance is read before.
func checkCancelCharge(t *testing.T, h Harness, tc cancelChargeCase) {
	is := is.New(t)
	s := h.Store
	id, attempt := tc.prepare(t, h)
	before := balance(t, s, "u")
	wantEntries := 1 // the refund's
	if tc.refund == 0 {
		wantEntries = 0 // the charge kept: no refund entry
	}

	refund, err := s.CancelTask(ctx, "u", id, imagegen.CancelParams{KeepStartedCharge: tc.keep})
	is.NoErr(err)
	is.Equal(refund, tc.refund) // what the cancel reports giving back
	is.Equal(balance(t, s, "u"), before+tc.refund)
	is.Equal(countRefs(checkLedger(t, s, "u"), imagegen.RefundRef(id)), wantEntries)
	got := getFailed(t, s, "u", id, imagegen.CodeCancelled)
	is.Equal(got.Error, imagegen.CancelledMessage)
	is.Equal(got.Refunded, tc.refund > 0)

	// Its last worker can change nothing more, and nothing hands it out
	// again or refunds it later.
	if attempt > 0 {
		is.True(errors.Is(s.RenewLease(ctx, id, attempt, lease), imagegen.ErrLeaseLost))
		is.True(errors.Is(s.CompleteTask(ctx, id, attempt, nil, nil), imagegen.ErrLeaseLost))
		is.True(errors.Is(errOf(s.FailTask(ctx, id, attempt, fail("late"))), imagegen.ErrLeaseLost))
		is.True(errors.Is(s.ReleaseTask(ctx, id, attempt), imagegen.ErrLeaseLost))
	}
	is.Equal(recoverAfterLease(t, h, 1).Moved(), 0) // it holds no lease
	_, err = s.ClaimTask(ctx, lease)
	is.True(errors.Is(err, imagegen.ErrNoTask))
	for _, keep := range []bool{true, false} {
		_, err = s.CancelTask(ctx, "u", id, imagegen.CancelParams{KeepStartedCharge: keep})
		is.True(errors.Is(err, imagegen.ErrInvalidTransition))
	}
	is.Equal(balance(t, s, "u"), before+tc.refund)
	is.Equal(countRefs(checkLedger(t, s, "u"), imagegen.RefundRef(id)), wantEntries)
	is.Equal(getFailed(t, s, "u", id, imagegen.CodeCancelled).Refunded, tc.refund > 0)
}
