package redis

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
)

// fundB grants owner "b" credits.
func fundB(t *testing.T, s *Store, credits int64) {
	t.Helper()
	if _, err := s.AddEntry(context.Background(), imagegen.LedgerEntry{Owner: "b", Kind: imagegen.LedgerGrant, Amount: credits, Ref: "grant:b"}); err != nil {
		t.Fatal(err)
	}
}

// stranded fails the test when task id is processing without a lease, or
// pending in no queue: states no script ever leaves by itself.
func stranded(t *testing.T, s *Store, id string) {
	t.Helper()
	ctx := context.Background()
	status, err := s.rdb.HGet(ctx, s.k.task(id), "status").Result()
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	_, errLease := s.rdb.ZScore(ctx, s.k.leases(), id).Result()
	model, _ := s.rdb.HGet(ctx, s.k.task(id), "model").Result()
	_, errFair := s.rdb.ZScore(ctx, s.k.fairModel(model), id).Result()
	switch {
	case status == "processing" && errLease != nil:
		t.Errorf("%s is processing with no lease (%v): never recovered", id, errLease)
	case status == "pending" && errFair != nil:
		t.Errorf("%s is pending in no fair queue (%v): never claimed", id, errFair)
	}
}

func balanceOf(t *testing.T, s *Store, owner string) int64 {
	t.Helper()
	b, err := s.Balance(context.Background(), owner)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNonFiniteSchedulingNumbers: "nan" and "inf" are numbers to Lua's
// tonumber (strtod), so they got past the "a number that is not one
// reads as none" rule: an owner's weight "nan" made a NaN stride and
// tag, whose ZADD into fair failed after the batch's writes (every owner
// of the batch charged, its tasks pending in no fair queue, every submit
// answered with an error); the same in a retry left the task pending in
// no queue.
func TestNonFiniteSchedulingNumbers(t *testing.T) {
	t.Run("create", func(t *testing.T) {
		fundedStores(t, 10, func(t *testing.T, s *Store) {
			ctx := context.Background()
			fundB(t, s, 10)
			if err := s.rdb.HSet(ctx, s.k.sched("b"), "w", "nan").Err(); err != nil {
				t.Fatal(err)
			}
			batch := []*createCall{{Req: submitArgs(t, s, schedTask("t1", "a"))}, {Req: submitArgs(t, s, schedTask("t2", "b"))}}
			s.runShardCreates(ctx, s.shards[0], batch)
			if c := batch[0]; c.Err != nil || c.Res.code != 1 {
				t.Errorf("a's submit: %+v, %v; want created (b's weight is not a's business)", c.Res, c.Err)
			}
			for _, c := range batch {
				if c.Err != nil {
					if exists, _ := s.rdb.Exists(ctx, s.k.task(c.Req.id)).Result(); exists == 1 {
						t.Errorf("%s: submit failed (%v) but the task exists", c.Req.id, c.Err)
					}
				}
			}
			if b := balanceOf(t, s, "a"); batch[0].Err != nil && b != 10 {
				t.Errorf("a's balance %d after a failed submit; want 10", b)
			}
			for _, id := range []string{"t1", "t2"} {
				if exists, _ := s.rdb.Exists(ctx, s.k.task(id)).Result(); exists == 1 {
					stranded(t, s, id)
				}
			}
		})
	})
	t.Run("retry", func(t *testing.T) {
		fundedStores(t, 10, func(t *testing.T, s *Store) {
			ctx := context.Background()
			c := claimedTask(t, s)
			if err := s.rdb.HSet(ctx, s.k.sched("a"), "w", "nan").Err(); err != nil {
				t.Fatal(err)
			}
			if err := s.RetryTask(ctx, c.ID, c.Attempt, 0, "x"); err != nil {
				t.Errorf("retry: %v", err)
			}
			stranded(t, s, c.ID)
		})
	})
	t.Run("vtag", func(t *testing.T) {
		fundedStores(t, 10, func(t *testing.T, s *Store) {
			ctx := context.Background()
			if err := s.rdb.Set(ctx, s.k.vtag(), "nan", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CreateTask(ctx, schedTask("t1", "a"), imagegen.CreateParams{}); err != nil {
				t.Errorf("submit: %v", err)
				if b := balanceOf(t, s, "a"); b != 10 {
					t.Errorf("a's balance %d after a failed submit; want 10", b)
				}
			}
			stranded(t, s, "t1")
			if _, err := s.ClaimTask(ctx, time.Minute); err != nil {
				t.Fatalf("claim: %v", err)
			}
			if v, _ := s.rdb.Get(ctx, s.k.vtag()).Result(); v == "nan" || v == "-nan" {
				t.Errorf("vtag still %q after a claim: never written over", v)
			}
		})
	})
}

// TestClaimFailingOnOneTaskStrandsTheOthers: the claim writes each task
// it takes as processing as it goes, and their leases at the end; a
// model's (or an owner's running set's) key of another kind failed the
// claim at that model's task, leaving the tasks taken before it, of any
// owner, processing with no lease (never recovered), and every later
// claim failed at the same task.
func TestClaimFailingOnOneTaskStrandsTheOthers(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		ctx := context.Background()
		fundB(t, s, 10)
		if _, err := s.CreateTask(ctx, schedTask("t1", "a"), imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
		t2 := schedTask("t2", "b")
		t2.Model = "m2"
		if _, err := s.CreateTask(ctx, t2, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
		spoil(t, s, s.k.model("m2"))
		got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 2})
		if err != nil {
			t.Errorf("claim: %v", err)
		}
		if len(got) == 0 || got[0].ID != "t1" {
			t.Errorf("claimed %v; want t1 first", got)
		}
		stranded(t, s, "t1")
		stranded(t, s, "t2")
	})
}

// TestRefundThatCannotBeWritten: a refund credits the balance, then
// appends the ledger entry, then marks the task refunded; a ledger of
// another kind failed the script between the first two, keeping the
// credit without the mark. Each try credited the owner again: a
// recovery at every run (and the failing task, the oldest lease, stopped
// every run before the other owners' expired leases), a cancel at every
// call (leaving the task pending in no queue).
func TestRefundThatCannotBeWritten(t *testing.T) {
	t.Run("recover", func(t *testing.T) {
		fundedStores(t, 10, func(t *testing.T, s *Store) {
			ctx := context.Background()
			fundB(t, s, 10)
			for _, task := range []*imagegen.Task{schedTask("t1", "b"), schedTask("t2", "a")} {
				if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 2}); err != nil {
				t.Fatal(err)
			}
			// Both leases ended, b's first.
			if err := s.rdb.ZAdd(ctx, s.k.leases(), goredisZ(0, "t1"), goredisZ(1, "t2")).Err(); err != nil {
				t.Fatal(err)
			}
			spoil(t, s, s.k.ledger("b"))
			for range 3 {
				_, _ = s.RecoverExpired(ctx, 1)
			}
			if b := balanceOf(t, s, "b"); b > 10 {
				t.Errorf("b's balance %d after three recoveries; want at most 10 (granted 10, charged 3)", b)
			}
			if st, _ := s.rdb.HGet(ctx, s.k.task("t2"), "status").Result(); st != "failed" {
				t.Errorf("a's t2 is %s; want failed by recovery (b's task must not stop it)", st)
			}
			if b := balanceOf(t, s, "a"); b != 10 {
				t.Errorf("a's balance %d; want 10 (refunded)", b)
			}
			stranded(t, s, "t1")
		})
	})
	t.Run("cancel", func(t *testing.T) {
		fundedStores(t, 10, func(t *testing.T, s *Store) {
			ctx := context.Background()
			fundB(t, s, 10)
			if _, err := s.CreateTask(ctx, schedTask("t1", "b"), imagegen.CreateParams{}); err != nil {
				t.Fatal(err)
			}
			spoil(t, s, s.k.ledger("b"))
			for range 3 {
				_, _ = s.CancelTask(ctx, "b", "t1", imagegen.CancelParams{})
			}
			if b := balanceOf(t, s, "b"); b > 10 {
				t.Errorf("b's balance %d after three cancels; want at most 10 (granted 10, charged 3)", b)
			}
			stranded(t, s, "t1")
		})
	})
}

func goredisZ(score float64, member string) goredis.Z { return goredis.Z{Score: score, Member: member} }

// TestRunningSetOfAnotherKindStrandsNoTask: a retry took the task out of
// the leases, then out of its owner's running set with a plain call: a
// running set of another kind failed it there, leaving the task
// processing with no lease (never recovered).
func TestRunningSetOfAnotherKindStrandsNoTask(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if _, err := s.CreateTask(ctx, schedTask("t1", "a"), imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
		got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 1, Limits: imagegen.Limits{OwnerConcurrency: 2}})
		if err != nil {
			t.Fatal(err)
		}
		spoil(t, s, s.k.tag+":run:o:a")
		if err := s.RetryTask(ctx, "t1", got[0].Attempt, 0, "x"); err != nil {
			t.Errorf("retry: %v", err)
		}
		stranded(t, s, "t1")
	})
}

// TestRequeueWithALedgerOfAnotherKind: a recharging requeue debited the
// balance, then failed at the ledger's RPUSH, keeping the debit without
// its entry (again at every try).
func TestRequeueWithALedgerOfAnotherKind(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		ctx := context.Background()
		c := claimedTask(t, s)
		if _, err := s.FailTask(ctx, c.ID, c.Attempt, imagegen.Failure{Message: "x", Code: imagegen.CodeInternal}); err != nil {
			t.Fatal(err)
		}
		spoil(t, s, s.k.ledger("a"))
		for range 2 {
			if err := s.RequeueTask(ctx, c.ID, true); err == nil {
				t.Fatal("requeue: no error; want one (the charge cannot be recorded)")
			}
		}
		if b := balanceOf(t, s, "a"); b != 10 {
			t.Errorf("a's balance %d after two refused requeues; want 10", b)
		}
	})
}
