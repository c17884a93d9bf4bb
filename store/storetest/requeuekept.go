package storetest

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// testRequeueRechargeOfAKeptCharge: a task whose owner cancelled it once
// a worker had claimed it, keeping its started charge
// (CancelParams.KeepStartedCharge), is failed and was never refunded. A
// requeue with a recharge would charge it a second time: the store
// itself refuses it (ErrDuplicateEntry) and changes nothing, though the
// balance would cover the recharge, since an operator's check made
// before the requeue can be outrun (another operator's free retry, a
// claim and such a cancel in between). A free requeue still works.
func testRequeueRechargeOfAKeptCharge(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	const cost = 2
	task, c := startTask(t, s, "u", cost)
	refund, err := s.CancelTask(ctx, "u", task.ID, imagegen.CancelParams{KeepStartedCharge: true})
	is.NoErr(err)
	is.Equal(refund, int64(0)) // its charge kept
	grant(t, s, "u", 5)        // a recharge would be covered
	before, err := s.TaskByID(ctx, task.ID)
	is.NoErr(err)
	is.Equal(before.Status, imagegen.StatusFailed)
	is.True(!before.Refunded)
	ledger := checkLedger(t, s, "u")

	err = s.RequeueTask(ctx, task.ID, true)
	is.True(errors.Is(err, imagegen.ErrDuplicateEntry)) // it would charge the task twice
	after, err := s.TaskByID(ctx, task.ID)
	is.NoErr(err)
	is.Equal(after, before) // unchanged
	is.Equal(balance(t, s, "u"), int64(5))
	is.Equal(checkLedger(t, s, "u"), ledger)
	is.Equal(countRefs(ledger, imagegen.RechargeRef(task.ID, c.Attempt)), 0)

	is.NoErr(s.RequeueTask(ctx, task.ID, false)) // free: charges nothing
	after = get(t, s, "u", task.ID)
	is.Equal(after.Status, imagegen.StatusPending)
	is.True(!after.Refunded) // its kept charge is still its one charge
	is.Equal(balance(t, s, "u"), int64(5))
	is.Equal(len(checkLedger(t, s, "u")), len(ledger))
}
