package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// testRecreateOfATaskIDChargesNothing (the expired case first: it
// claims the one task it submits): a CreateTask that asks for the
// id of a task that exists is refused with ErrDuplicateEntry, no second
// charge, no task. A store whose ledger keeps each charge's reference
// unique per owner (Harness.KeepsChargedIDs: the memory store,
// PostgreSQL) refuses the id of a task retention has removed too; the
// Redis store keeps no trace of it, and the Service never asks for one
// (it keeps an idempotency record no longer than the store's retention:
// imagegen.TaskRetainer).
func testRecreateOfATaskIDChargesNothing(t *testing.T, h Harness) {
	t.Run("expired", func(t *testing.T) {
		if !h.KeepsChargedIDs {
			t.Skip("this store keeps no trace of a removed task's id (Harness.KeepsChargedIDs); the Service asks for none")
		}
		is := is.New(t)
		s := h.Store
		const cost = 2
		task, c := startTask(t, s, "x", cost)
		is.NoErr(s.CompleteTask(ctx, task.ID, c.Attempt, nil, nil))
		h.Advance(h.Retention + time.Second)
		_, err := s.PurgeExpired(ctx)
		is.NoErr(err)
		_, err = s.Task(ctx, "x", task.ID)
		is.True(errors.Is(err, imagegen.ErrTaskNotFound)) // gone with its retention
		grant(t, s, "x", 5)
		ledger := checkLedger(t, s, "x")
		is.Equal(countRefs(ledger, imagegen.ChargeRef(task.ID)), 1)

		again := newTask("x", cost)
		again.ID = task.ID
		_, err = s.CreateTask(ctx, again, imagegen.CreateParams{})
		is.True(errors.Is(err, imagegen.ErrDuplicateEntry)) // its id was charged once already
		is.Equal(balance(t, s, "x"), int64(5))
		after := checkLedger(t, s, "x")
		is.Equal(after, ledger)
		_, err = s.Task(ctx, "x", task.ID)
		is.True(errors.Is(err, imagegen.ErrTaskNotFound)) // nothing made
	})
	t.Run("live", func(t *testing.T) {
		is := is.New(t)
		s := h.Store
		grant(t, s, "u", 5)
		live := submit(t, s, "u", 1)
		twin := newTask("u", 1)
		twin.ID = live.ID
		_, err := s.CreateTask(ctx, twin, imagegen.CreateParams{})
		is.True(errors.Is(err, imagegen.ErrDuplicateEntry)) // the id of a task that exists
		is.Equal(balance(t, s, "u"), int64(4))
		is.Equal(countRefs(checkLedger(t, s, "u"), imagegen.ChargeRef(live.ID)), 1)
	})
}
