package redis

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// The keys a task given back to the queue is written into (enqueue in
// the prelude), each of which something other than the store might
// spoil.
var queueKeys = map[string]func(s *Store) string{
	"model's fair": func(s *Store) string { return s.k.fairModel("m") },
	"fair models":  func(s *Store) string { return s.k.fairModels() },
	"pending":      func(s *Store) string { return s.k.pending() },
}

// leaseOf is task id's lease end in the leases, and its lease_until
// field; it fails the test when the task is not processing or has no
// lease.
func leaseOf(t *testing.T, s *Store, id string) (score float64, field string) {
	t.Helper()
	ctx := context.Background()
	f, err := s.rdb.HMGet(ctx, s.k.task(id), "status", "lease_until").Result()
	if err != nil {
		t.Fatal(err)
	}
	if f[0] != "processing" {
		t.Fatalf("%s is %v; want processing", id, f[0])
	}
	score, err = s.rdb.ZScore(ctx, s.k.leases(), id).Result()
	if err != nil {
		t.Fatalf("%s is processing with no lease (%v): never recovered", id, err)
	}
	field, _ = f[1].(string)
	return score, field
}

// expire makes the leases of ids end now, for RecoverExpired.
func expire(t *testing.T, s *Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := s.rdb.ZAdd(context.Background(), s.k.leases(), goredisZ(0, id)).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGiveBackWithAQueueOfAnotherKindLeavesTheLease: a retry or release
// took the task out of the leases and set it pending, then wrote it into
// the queues with plain calls: a queue of another kind failed it there,
// leaving the task pending in no queue, with no lease (never claimed,
// never recovered). Now the call fails with errQueueKeys and changes
// nothing: the task keeps its lease, and once the key is mended the
// lease's recovery gives it back.
func TestGiveBackWithAQueueOfAnotherKindLeavesTheLease(t *testing.T) {
	ops := map[string]func(s *Store, c *imagegen.Task) error{
		"retry": func(s *Store, c *imagegen.Task) error {
			return s.RetryTask(context.Background(), c.ID, c.Attempt, 0, "x")
		},
		"release": func(s *Store, c *imagegen.Task) error { return s.ReleaseTask(context.Background(), c.ID, c.Attempt) },
	}
	for opName, op := range ops {
		for keyName, key := range queueKeys {
			t.Run(opName+"/"+keyName, func(t *testing.T) {
				fundedStores(t, 10, func(t *testing.T, s *Store) {
					ctx := context.Background()
					c := claimedTask(t, s)
					balance := balanceOf(t, s, "a")
					score, field := leaseOf(t, s, c.ID)
					spoiled := key(s)
					spoil(t, s, spoiled)
					err := op(s, c)
					stranded(t, s, c.ID)
					if !errors.Is(err, errQueueKeys) {
						t.Fatalf("%s with %s of another kind: %v; want errQueueKeys", opName, keyName, err)
					}
					if got, gotField := leaseOf(t, s, c.ID); got != score || gotField != field {
						t.Fatalf("lease %v (%s); want it as it was, %v (%s)", got, gotField, score, field)
					}
					if got, err := s.TaskByID(ctx, c.ID); err != nil || got.Attempt != c.Attempt || got.Released != c.Released {
						t.Fatalf("task %+v, %v; want attempt %d, released %d", got, err, c.Attempt, c.Released)
					}
					if b := balanceOf(t, s, "a"); b != balance {
						t.Fatalf("balance %d; want %d", b, balance)
					}
					if err := s.rdb.Del(ctx, spoiled).Err(); err != nil {
						t.Fatal(err)
					}
					expire(t, s, c.ID)
					if rec, err := s.RecoverExpired(ctx, 5); err != nil || rec.Requeued != 1 {
						t.Fatalf("recovery once mended: %+v, %v; want the task requeued", rec, err)
					}
					if got, err := s.ClaimTask(ctx, time.Minute); err != nil || got.ID != c.ID {
						t.Fatalf("claim once mended: %v, %v; want %s", got, err, c.ID)
					}
				})
			})
		}
	}
}

// TestRecoverWithAQueueOfAnotherKindLeavesTheLease: recovery took an
// expired lease out of the leases and set its task pending, then wrote
// it into the queues with plain calls: a queue of another kind failed
// the whole batch there, leaving that task pending in no queue, with no
// lease, and the rest of the batch not recovered. Now a task that
// cannot be queued is left processing, its lease end a minute later (as
// one whose refund cannot be written), the others are recovered, and
// the call answers errQueueKeys with what it recovered.
func TestRecoverWithAQueueOfAnotherKindLeavesTheLease(t *testing.T) {
	for keyName, key := range queueKeys {
		t.Run(keyName, func(t *testing.T) {
			fundedStores(t, 10, func(t *testing.T, s *Store) {
				ctx := context.Background()
				// t1 of model m, t2 of model n: only t1's own queue is spoiled in "model's fair".
				for _, task := range []*imagegen.Task{schedTask("t1", "a"), schedTask("t2", "a")} {
					if task.ID == "t2" {
						task.Model = "n"
					}
					if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
						t.Fatal(err)
					}
				}
				if got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 2}); err != nil || len(got) != 2 {
					t.Fatalf("claim: %d tasks, %v", len(got), err)
				}
				balance := balanceOf(t, s, "a")
				spoiled := key(s)
				spoil(t, s, spoiled)
				expire(t, s, "t1", "t2")
				before := time.Now()
				rec, err := s.RecoverExpired(ctx, 5)
				stranded(t, s, "t1")
				stranded(t, s, "t2")
				if !errors.Is(err, errQueueKeys) {
					t.Fatalf("recovery with %s of another kind: %+v, %v; want errQueueKeys", keyName, rec, err)
				}
				left := []string{"t1", "t2"}
				if keyName == "model's fair" {
					left = left[:1]
					if rec.Requeued != 1 || len(rec.Failed) != 0 {
						t.Fatalf("recovered %+v; want t2 requeued", rec)
					}
					if st, _ := s.rdb.HGet(ctx, s.k.task("t2"), "status").Result(); st != "pending" {
						t.Fatalf("t2 is %s; want pending", st)
					}
				} else if rec.Moved() != 0 {
					t.Fatalf("recovered %+v; want nothing moved", rec)
				}
				for _, id := range left {
					stranded(t, s, id)
					score, field := leaseOf(t, s, id)
					if end := time.UnixMilli(int64(score)); end.Before(before.Add(50*time.Second)) || field != int64String(int64(score)) {
						t.Fatalf("%s: lease end %v (field %s); want about a minute from now", id, end, field)
					}
				}
				if b := balanceOf(t, s, "a"); b != balance {
					t.Fatalf("balance %d; want %d", b, balance)
				}
				if err := s.rdb.Del(ctx, spoiled).Err(); err != nil {
					t.Fatal(err)
				}
				expire(t, s, left...)
				if rec, err := s.RecoverExpired(ctx, 5); err != nil || rec.Requeued != len(left) {
					t.Fatalf("recovery once mended: %+v, %v; want %v requeued", rec, err, left)
				}
				if got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 2}); err != nil || len(got) != 2 {
					t.Fatalf("claim once mended: %d tasks, %v; want both", len(got), err)
				}
			})
		})
	}
}

// TestRequeueWithAQueueOfAnotherKindChargesNothing: an operator's
// requeue with a recharge debited the task's cost and set it pending,
// then wrote it into the queues with plain calls: a queue of another
// kind failed it there, keeping the charge, the task pending in no
// queue (never claimed). Now it fails with errQueueKeys before the
// charge: the task stays failed and refunded, and once the key is
// mended the requeue goes through.
func TestRequeueWithAQueueOfAnotherKindChargesNothing(t *testing.T) {
	for keyName, key := range queueKeys {
		t.Run(keyName, func(t *testing.T) {
			fundedStores(t, 10, func(t *testing.T, s *Store) {
				ctx := context.Background()
				c := claimedTask(t, s)
				if _, err := s.FailTask(ctx, c.ID, c.Attempt, imagegen.Failure{Code: imagegen.CodeInternal, Message: "x"}); err != nil {
					t.Fatal(err)
				}
				balance := balanceOf(t, s, "a")
				ledger, _ := s.rdb.LLen(ctx, s.k.ledger("a")).Result()
				spoiled := key(s)
				spoil(t, s, spoiled)
				err := s.RequeueTask(ctx, c.ID, true)
				stranded(t, s, c.ID)
				if b := balanceOf(t, s, "a"); b != balance {
					t.Errorf("balance %d; want %d: nothing charged", b, balance)
				}
				if !errors.Is(err, errQueueKeys) {
					t.Fatalf("requeue with %s of another kind: %v; want errQueueKeys", keyName, err)
				}
				f, _ := s.rdb.HMGet(ctx, s.k.task(c.ID), "status", "refunded").Result()
				if f[0] != "failed" || f[1] != "1" {
					t.Fatalf("task status %v, refunded %v; want failed and refunded, as it was", f[0], f[1])
				}
				if n, _ := s.rdb.LLen(ctx, s.k.ledger("a")).Result(); n != ledger {
					t.Fatalf("ledger of %d entries; want %d", n, ledger)
				}
				if err := s.rdb.Del(ctx, spoiled).Err(); err != nil {
					t.Fatal(err)
				}
				if err := s.RequeueTask(ctx, c.ID, true); err != nil {
					t.Fatalf("requeue once mended: %v", err)
				}
				if b := balanceOf(t, s, "a"); b != balance-c.Cost {
					t.Fatalf("balance %d; want %d, charged once", b, balance-c.Cost)
				}
				if got, err := s.ClaimTask(ctx, time.Minute); err != nil || got.ID != c.ID {
					t.Fatalf("claim once mended: %v, %v; want %s", got, err, c.ID)
				}
			})
		})
	}
}

func int64String(n int64) string { return strconv.FormatInt(n, 10) }

// TestGiveBackWithATseqOfAnotherKind: the queueing count (tseq), which
// only breaks ties of tag, was taken with a plain INCR in enqueue, after
// the writes of the script giving the task back: a tseq that is not a
// number, or of another kind, failed a retry there, leaving the task
// pending in no queue and with no lease. Now it counts as 0, and the
// task is given back.
func TestGiveBackWithATseqOfAnotherKind(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		ctx := context.Background()
		c := claimedTask(t, s)
		spoil(t, s, s.k.tseq())
		err := s.RetryTask(ctx, c.ID, c.Attempt, 0, "x")
		stranded(t, s, c.ID)
		if err != nil {
			t.Fatalf("retry with tseq not a number: %v", err)
		}
		if got, err := s.ClaimTask(ctx, time.Minute); err != nil || got.ID != c.ID {
			t.Fatalf("claim after the retry: %v, %v; want %s", got, err, c.ID)
		}
	})
}

// TestRequeueWithWebhooksOfAnotherKind: an operator's requeue takes the
// task's pending deliveries out of webhooks with a call made after the
// recharge; a webhooks key of another kind (which holds no delivery)
// failed it there, keeping the charge with the task still failed. The
// call reads such a key as holding none, and the requeue goes on.
func TestRequeueWithWebhooksOfAnotherKind(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		ctx := context.Background()
		c := claimedTask(t, s)
		if _, err := s.FailTask(ctx, c.ID, c.Attempt, imagegen.Failure{Code: imagegen.CodeInternal, Message: "x"}); err != nil {
			t.Fatal(err)
		}
		balance := balanceOf(t, s, "a")
		spoil(t, s, s.k.webhooks())
		if err := s.RequeueTask(ctx, c.ID, true); err != nil {
			t.Fatalf("requeue with webhooks of another kind: %v", err)
		}
		if b := balanceOf(t, s, "a"); b != balance-c.Cost {
			t.Fatalf("balance %d; want %d, charged once", b, balance-c.Cost)
		}
		if got, err := s.ClaimTask(ctx, time.Minute); err != nil || got.ID != c.ID {
			t.Fatalf("claim after the requeue: %v, %v; want %s", got, err, c.ID)
		}
	})
}
