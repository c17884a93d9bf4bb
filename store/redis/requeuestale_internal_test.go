package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// TestRequeueOfAStaleReadNamesNoOtherAttempt: RequeueTask reads the task,
// then runs its script with references (RechargeRef, RerefundRef) built
// from the attempt it read. A task requeued by another operator, claimed
// and failed again in between has moved on an attempt: the script run
// with the stale read recharged under the old attempt's reference (or
// refused it as a duplicate). It must refuse the stale read, changing
// nothing, and RequeueTask must recharge under the current attempt.
func TestRequeueOfAStaleReadNamesNoOtherAttempt(t *testing.T) {
	for _, other := range []struct {
		name     string
		recharge bool
	}{{"other free", false}, {"other recharged", true}} {
		t.Run(other.name, func(t *testing.T) {
			fundedStores(t, 10, func(t *testing.T, s *Store) {
				ctx := context.Background()
				fail := func(c *imagegen.Task) {
					t.Helper()
					if _, err := s.FailTask(ctx, c.ID, c.Attempt, imagegen.Failure{Message: "x", Code: imagegen.CodeInternal}); err != nil {
						t.Fatal(err)
					}
				}
				fail(claimedTask(t, s))
				stale, err := s.TaskByID(ctx, "t1")
				if err != nil {
					t.Fatal(err)
				}
				// Another operator's requeue, a claim and a failure, between
				// the read and the script.
				if err := s.RequeueTask(ctx, "t1", other.recharge); err != nil {
					t.Fatal(err)
				}
				c, err := s.ClaimTask(ctx, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				fail(c)
				before := balanceOf(t, s, "a")

				err = s.requeueRead(ctx, stale, true)
				if !errors.Is(err, errAttemptMoved) || !errors.Is(err, imagegen.ErrInvalidTransition) {
					t.Fatalf("requeue of attempt %d's read at attempt %d: %v; want errAttemptMoved", stale.Attempt, c.Attempt, err)
				}
				if got, _ := s.TaskByID(ctx, "t1"); got.Status != imagegen.StatusFailed {
					t.Errorf("task %s after the refused requeue; want failed", got.Status)
				}
				if b := balanceOf(t, s, "a"); b != before {
					t.Errorf("balance %d after the refused requeue; want %d", b, before)
				}

				if err := s.RequeueTask(ctx, "t1", true); err != nil {
					t.Fatalf("requeue: %v", err)
				}
				entries, err := s.Ledger(ctx, "a")
				if err != nil {
					t.Fatal(err)
				}
				if last := entries[len(entries)-1]; last.Ref != imagegen.RechargeRef("t1", c.Attempt) {
					t.Errorf("recharge under %q; want %q", last.Ref, imagegen.RechargeRef("t1", c.Attempt))
				}
			})
		})
	}
}

// TestRequeueOfAStaleReadRechargesNoKeptCharge: a recharge read the task
// failed and refunded; before its script another operator recharged it,
// a worker claimed it and its owner cancelled it keeping that started
// charge, so the task is failed and not refunded. The stale run is
// refused (its attempt moved) and RequeueTask's read again refuses the
// recharge (ErrDuplicateEntry): no second charge, nothing changed.
func TestRequeueOfAStaleReadRechargesNoKeptCharge(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		ctx := context.Background()
		c := claimedTask(t, s)
		if _, err := s.FailTask(ctx, c.ID, c.Attempt, imagegen.Failure{Message: "x", Code: imagegen.CodeInternal}); err != nil {
			t.Fatal(err)
		}
		stale, err := s.TaskByID(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		if !stale.Refunded {
			t.Fatal("failed task not refunded")
		}
		// Another operator's recharge, a claim and the owner's cancel
		// keeping the started charge, between the read and the script.
		if err := s.RequeueTask(ctx, "t1", true); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ClaimTask(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CancelTask(ctx, "a", "t1", imagegen.CancelParams{KeepStartedCharge: true}); err != nil {
			t.Fatal(err)
		}
		before := balanceOf(t, s, "a")

		if err := s.requeueRead(ctx, stale, true); !errors.Is(err, errAttemptMoved) {
			t.Fatalf("requeue of a stale read: %v; want errAttemptMoved", err)
		}
		if err := s.RequeueTask(ctx, "t1", true); !errors.Is(err, imagegen.ErrDuplicateEntry) {
			t.Fatalf("recharge of a kept charge: %v; want ErrDuplicateEntry", err)
		}
		got, err := s.TaskByID(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != imagegen.StatusFailed || got.Refunded {
			t.Errorf("task %s refunded %v after the refused recharges; want failed, not refunded", got.Status, got.Refunded)
		}
		if b := balanceOf(t, s, "a"); b != before {
			t.Errorf("balance %d after the refused recharges; want %d", b, before)
		}
	})
}
