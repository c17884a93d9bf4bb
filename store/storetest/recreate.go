package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// testRecreateOfAnExpiredTaskChargesNothing: a task's id is charged
// once (its charge's reference, ChargeRef, is unique per owner), also
// after retention has removed the task. A CreateTask that asks for the
// id again (Service.SubmitIdempotent does, settling a submission of
// unknown outcome whose key outlived the task: Config.IdempotencyTTL
// longer than the retention) is refused with ErrDuplicateEntry, as the
// id of a task that exists is: no second charge, no task.
func testRecreateOfAnExpiredTaskChargesNothing(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	const cost = 2
	task, c := startTask(t, s, "u", cost)
	is.NoErr(s.CompleteTask(ctx, task.ID, c.Attempt, nil, nil))
	h.Advance(h.Retention + time.Second)
	_, err := s.PurgeExpired(ctx)
	is.NoErr(err)
	_, err = s.Task(ctx, "u", task.ID)
	is.True(errors.Is(err, imagegen.ErrTaskNotFound)) // gone with its retention
	grant(t, s, "u", 5)
	ledger := checkLedger(t, s, "u")
	is.Equal(countRefs(ledger, imagegen.ChargeRef(task.ID)), 1)

	again := newTask("u", cost)
	again.ID = task.ID
	_, err = s.CreateTask(ctx, again, imagegen.CreateParams{})
	is.True(errors.Is(err, imagegen.ErrDuplicateEntry)) // its id was charged once already
	is.Equal(balance(t, s, "u"), int64(5))
	after := checkLedger(t, s, "u")
	is.Equal(after, ledger)
	is.Equal(countRefs(after, imagegen.ChargeRef(task.ID)), 1)
	_, err = s.Task(ctx, "u", task.ID)
	is.True(errors.Is(err, imagegen.ErrTaskNotFound)) // nothing made

	live := submit(t, s, "u", 1)
	twin := newTask("u", 1)
	twin.ID = live.ID
	_, err = s.CreateTask(ctx, twin, imagegen.CreateParams{})
	is.True(errors.Is(err, imagegen.ErrDuplicateEntry)) // the id of a task that exists
	is.Equal(balance(t, s, "u"), int64(4))
	is.Equal(countRefs(checkLedger(t, s, "u"), imagegen.ChargeRef(live.ID)), 1)
}
