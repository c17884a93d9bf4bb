package redis

import (
	"context"
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

		if refund, err := s.CancelTask(ctx, "a", "t2"); err != nil || refund != 3 {
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
