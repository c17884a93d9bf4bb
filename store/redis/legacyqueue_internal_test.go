package redis

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
)

// toLegacyQueue moves pending task id from its model's fair queue into
// the legacy one, fair, with its score, as a version before the model
// queues queued it.
func toLegacyQueue(t *testing.T, s *Store, model, id string) {
	t.Helper()
	ctx := context.Background()
	score, err := s.rdb.ZScore(ctx, s.k.fairModel(model), id).Result()
	if err != nil {
		t.Fatalf("%s in %s's queue: %v", id, model, err)
	}
	if err := s.rdb.ZRem(ctx, s.k.fairModel(model), id).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.ZAdd(ctx, s.k.fair(), goredis.Z{Score: score, Member: id}).Err(); err != nil {
		t.Fatal(err)
	}
}

// A store written by a version before the model queues keeps its
// pending tasks in one queue, fair. This version still counts them in
// queue positions, cancels them (out of fair, its owner's pending count
// down) and claims them in their order among the tasks of the model
// queues; a task of fair given back goes into its model's queue, and
// fair empties.
func TestLegacyFairQueueIsClaimedAndCancelled(t *testing.T) {
	fundedStores(t, 20, func(t *testing.T, s *Store) {
		ctx := context.Background()
		ids := []string{"t1", "t2", "t3", "t4", "t5"}
		for _, id := range ids {
			if _, err := s.CreateTask(ctx, schedTask(id, "a"), imagegen.CreateParams{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"t1", "t2", "t4"} {
			toLegacyQueue(t, s, "m", id)
		}
		positions := func(want ...int) {
			t.Helper()
			got, err := s.QueuePositions(ctx, ids)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("positions of %v: %v, %v; want %v", ids, got, err, want)
			}
		}
		positions(0, 1, 2, 3, 4)

		if refund, err := s.CancelTask(ctx, "a", "t2", imagegen.CancelParams{}); err != nil || refund != 3 {
			t.Fatalf("cancel t2: %d, %v; want 3 back", refund, err)
		}
		if _, err := s.rdb.ZScore(ctx, s.k.fair(), "t2").Result(); !isNil(err) {
			t.Fatalf("t2 cancelled, in fair: %v; want not", err)
		}
		if pend, err := s.rdb.HGet(ctx, s.k.sched("a"), "pend").Result(); err != nil || pend != "4" {
			t.Fatalf("a's pending count %q, %v; want 4", pend, err)
		}
		positions(0, -1, 1, 2, 3)

		c, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 2})
		if err != nil || len(c) != 2 || c[0].ID != "t1" || c[1].ID != "t3" {
			t.Fatalf("claimed %v, %v; want t1 (fair) and t3 (its model's queue)", c, err)
		}
		if err := s.ReleaseTask(ctx, "t1", c[0].Attempt); err != nil {
			t.Fatal(err)
		}
		if _, err := s.rdb.ZScore(ctx, s.k.fairModel("m"), "t1").Result(); err != nil {
			t.Fatalf("t1 given back, in its model's queue: %v; want it there", err)
		}
		positions(2, -1, -1, 0, 1) // t1 given back is queued behind the others
		for _, want := range []string{"t4", "t5", "t1"} {
			if c, err := s.ClaimTask(ctx, time.Minute); err != nil || c.ID != want {
				t.Fatalf("claimed %v, %v; want %s", c, err, want)
			}
		}
		if _, err := s.ClaimTask(ctx, time.Minute); err != imagegen.ErrNoTask {
			t.Fatalf("claim of an empty queue: %v; want ErrNoTask", err)
		}
		if n, err := s.rdb.Exists(ctx, s.k.fair(), s.k.fairModel("m"), s.k.fairModels()).Result(); err != nil || n != 0 {
			t.Fatalf("%d of fair, the model's queue and fair:models left, %v; want none, the queues empty", n, err)
		}
		if pend, err := s.rdb.HGet(ctx, s.k.sched("a"), "pend").Result(); err != nil || pend != "0" {
			t.Fatalf("a's pending count %q, %v; want 0", pend, err)
		}
	})
}

// In fair, the legacy queue, tasks of a held model are passed over one
// by one, as in the one queue before: the tasks behind them, there and
// in the model queues, are claimed, and the held ones once the hold
// ends.
func TestLegacyFairQueueHeldModel(t *testing.T) {
	fundedStores(t, 30, func(t *testing.T, s *Store) {
		ctx := context.Background()
		submit := func(id, model string) {
			t.Helper()
			task := schedTask(id, "a")
			task.Model = model
			if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"s1", "s2", "s3"} {
			submit(id, "slow")
			toLegacyQueue(t, s, "slow", id)
		}
		submit("f1", "fast")
		toLegacyQueue(t, s, "fast", "f1")
		submit("f2", "fast")
		l := imagegen.Limits{ModelConcurrency: map[string]int{"slow": 1}}
		claim := func(n int) []string {
			t.Helper()
			got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: n, Limits: l})
			if err != nil && err != imagegen.ErrNoTask {
				t.Fatal(err)
			}
			var ids []string
			for _, c := range got {
				ids = append(ids, c.ID)
			}
			return ids
		}
		if got := claim(1); !slices.Equal(got, []string{"s1"}) {
			t.Fatalf("claimed %v; want s1, the slow model's one slot", got)
		}
		if got := claim(8); !slices.Equal(got, []string{"f1", "f2"}) {
			t.Fatalf("claimed %v; want f1 (behind slow's in fair) and f2", got)
		}
		if got := claim(8); len(got) != 0 {
			t.Fatalf("claimed %v; want nothing, slow at its cap", got)
		}
		if got := claim(8); len(got) != 0 {
			t.Fatalf("claimed %v; want nothing, slow at its cap", got)
		}
		st, err := s.SchedulerStats(ctx, l)
		if err != nil || st.Held[imagegen.HeldModelCap] != 2 {
			t.Fatalf("stats %+v, %v; want slow's two held", st, err)
		}
		l.ModelConcurrency["slow"] = 3
		if got := claim(8); !slices.Equal(got, []string{"s2", "s3"}) {
			t.Fatalf("claimed %v; want s2, s3 once slow's cap allows", got)
		}
	})
}

// oldVersionCancel does to pending task id what a cancel of the version
// before the model queues does (its dequeue: ZREM from fair, the owner's
// pend count down only if that removed it, ZREM from pending; then the
// task is failed), for a rolling upgrade where processes of both
// versions share the store.
func oldVersionCancel(t *testing.T, s *Store, owner, id string) {
	t.Helper()
	ctx := context.Background()
	if n, err := s.rdb.ZRem(ctx, s.k.fair(), id).Result(); err != nil {
		t.Fatal(err)
	} else if n == 1 {
		s.rdb.HIncrBy(ctx, s.k.sched(owner), "pend", -1)
	}
	if err := s.rdb.ZRem(ctx, s.k.pending(), id).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.HSet(ctx, s.k.task(id), "status", "failed").Err(); err != nil {
		t.Fatal(err)
	}
}

// During a rolling upgrade an API process of the version before the
// model queues cancels tasks that this version queued (submitted by its
// API processes, or given back by its workers, which are upgraded
// first) in their model's queue. Its dequeue only knows fair: the entry
// stays in the model's queue, a task that is not pending, and the
// owner's pending count is not taken down. The claims of this version
// passed over such entries one by one and never removed them, so once
// ClaimScan of them lay at the head of a model's queue no task of that
// model was ever claimed again; they now remove them, and take the
// owner's count down (before the model queues both versions
// used fair, and the earlier version's cancel removed the entry).
func TestReviewOldVersionCancelsStrandNoModelQueue(t *testing.T) {
	fundedStores(t, 1000, func(t *testing.T, s *Store) {
		ctx := context.Background()
		var ids []string
		for i := 0; i < imagegen.ClaimScan+2; i++ {
			id := fmt.Sprintf("t%03d", i)
			if _, err := s.CreateTask(ctx, schedTask(id, "a"), imagegen.CreateParams{}); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		for _, id := range ids[:imagegen.ClaimScan+1] {
			oldVersionCancel(t, s, "a", id)
		}
		// A claim may still pass over the entries left behind (its
		// look-ahead bounds its work), but the claims after it find the
		// one pending task.
		last := ids[len(ids)-1]
		var got *imagegen.Task
		var err error
		for range 2 {
			if got, err = s.ClaimTask(ctx, time.Minute); err == nil {
				break
			}
		}
		if err != nil || got.ID != last {
			n, _ := s.rdb.ZCard(ctx, s.k.fairModel("m")).Result()
			t.Fatalf("two claims after the old version's cancels: %v, %v; want %s, the one pending task (the model's queue holds %d entries)", got, err, last, n)
		}
		// The owner's count of pending tasks, which the old version's
		// cancels left as it was, is taken down with the entries.
		if pend, err := s.rdb.HGet(ctx, s.k.sched("a"), "pend").Int(); err != nil || pend != 0 {
			t.Fatalf("owner a's pending count after its tasks were cancelled or claimed: %d, %v; want 0", pend, err)
		}
	})
}
