package redis

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// TestCreateBatchTakenBackWhenAStoreQueueIsSpoiled: when one of the
// store-wide queues holds a value of another kind, a create batch used
// to fail after every owner was charged and its tasks written (the
// submits answered with an error, the credits gone, tasks pending in no
// queue). Now the batch is taken back whole: every submit fails with
// errStoreKeys, and balances, ledgers, owners' indexes, scheduling
// states and the other queues are as they were; once the key is mended,
// submits go on.
func TestCreateBatchTakenBackWhenAStoreQueueIsSpoiled(t *testing.T) {
	for name, key := range map[string]func(s *Store) string{
		"pending":          func(s *Store) string { return s.k.pending() },
		"model's fair":     func(s *Store) string { return s.k.fairModel("m") },
		"fair models":      func(s *Store) string { return s.k.fairModels() },
		"operators' index": func(s *Store) string { return s.k.allTasks() },
	} {
		t.Run(name, func(t *testing.T) {
			fundedStores(t, 10, func(t *testing.T, s *Store) {
				ctx := context.Background()
				fundB(t, s, 10)
				// b has tasks queued already: its scheduling state and index exist.
				if _, err := s.CreateTask(ctx, schedTask("b0", "b"), imagegen.CreateParams{}); err != nil {
					t.Fatal(err)
				}
				type state struct {
					balance, ledger, index int64
					sched                  map[string]string
				}
				read := func(owner string) state {
					var st state
					st.balance = balanceOf(t, s, owner)
					st.ledger, _ = s.rdb.LLen(ctx, s.k.ledger(owner)).Result()
					st.index, _ = s.rdb.ZCard(ctx, s.k.ownerTasks(owner)).Result()
					st.sched, _ = s.rdb.HGetAll(ctx, s.k.sched(owner)).Result()
					return st
				}
				before := map[string]state{"a": read("a"), "b": read("b")}
				queues := map[string]int64{}
				for _, k := range []string{s.k.pending(), s.k.fairModel("m"), s.k.allTasks()} {
					queues[k], _ = s.rdb.ZCard(ctx, k).Result()
				}
				spoiled := key(s)
				spoil(t, s, spoiled)
				batch := []*createCall{{Req: submitArgs(t, s, schedTask("t1", "a"))}, {Req: submitArgs(t, s, schedTask("t2", "b"))}, {Req: submitArgs(t, s, schedTask("t3", "a"))}}
				s.runShardCreates(ctx, s.shards[0], batch)
				for i, c := range batch {
					if c.Err != nil || c.Res.code != -4 {
						t.Fatalf("call %d: %+v, %v; want code -4 (store keys)", i, c.Res, c.Err)
					}
				}
				if _, err := s.CreateTask(ctx, schedTask("t4", "a"), imagegen.CreateParams{}); !errors.Is(err, errStoreKeys) {
					t.Fatalf("a submit alone: %v; want errStoreKeys", err)
				}
				for owner, was := range before {
					now := read(owner)
					if now.balance != was.balance || now.ledger != was.ledger || now.index != was.index || !maps.Equal(now.sched, was.sched) {
						t.Fatalf("%s: %+v; want as it was, %+v", owner, now, was)
					}
				}
				for _, id := range []string{"t1", "t2", "t3", "t4"} {
					if n, _ := s.rdb.Exists(ctx, s.k.task(id)).Result(); n != 0 {
						t.Fatalf("task %s kept", id)
					}
				}
				for k, was := range queues {
					if k == spoiled {
						continue
					}
					if n, _ := s.rdb.ZCard(ctx, k).Result(); n != was {
						t.Fatalf("%s: %d entries; want %d as it had", k, n, was)
					}
				}
				if err := s.rdb.Del(ctx, spoiled).Err(); err != nil {
					t.Fatal(err)
				}
				if _, err := s.CreateTask(ctx, schedTask("t5", "a"), imagegen.CreateParams{}); err != nil {
					t.Fatalf("submit once mended: %v", err)
				}
				if c, err := s.ClaimTask(ctx, time.Minute); err != nil || c.ID != "t5" && c.ID != "b0" {
					t.Fatalf("claimed %v, %v", c, err)
				}
			})
		})
	}
}

// TestClaimWithAStoreKeyOfAnotherKindStrandsNoTask: the claim set each
// task it took processing, then wrote the leases (and, in between, the
// processing callbacks) with plain calls: a leases or webhooks key of
// another kind failed every claim after it had set its tasks
// processing, leaving them with no lease and in the fair queue, passed
// over by every later claim. Each claim stranded the next tasks; once
// the key was mended they were never recovered, and no claim found
// them. Now a claim that fails on such a key sets no task processing
// without its lease, and the tasks are claimed once it is mended (after
// recovery, for those that a claim failing at the webhooks left leased).
func TestClaimWithAStoreKeyOfAnotherKindStrandsNoTask(t *testing.T) {
	for name, key := range map[string]func(s *Store) string{
		"leases":   func(s *Store) string { return s.k.leases() },
		"webhooks": func(s *Store) string { return s.k.webhooks() },
	} {
		t.Run(name, func(t *testing.T) {
			fundedStores(t, 100, func(t *testing.T, s *Store) {
				ctx := context.Background()
				ids := []string{"t0", "t1", "t2", "t3", "t4"}
				for _, id := range ids {
					task := schedTask(id, "a")
					task.Request.CallbackURL = "https://example.com/hook"
					task.Request.CallbackEvents = []imagegen.CallbackEvent{imagegen.EventProcessing, imagegen.EventCompleted}
					if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
						t.Fatal(err)
					}
				}
				spoiled := key(s)
				spoil(t, s, spoiled)
				for _, n := range []int{1, 1, 3} {
					if got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: n}); err == nil {
						t.Fatalf("claim with %s of another kind: %d tasks, no error", name, len(got))
					}
				}
				for _, id := range ids {
					stranded(t, s, id)
				}
				if err := s.rdb.Del(ctx, spoiled).Err(); err != nil {
					t.Fatal(err)
				}
				// The leases the failed claims wrote end now.
				leased, err := s.rdb.ZRange(ctx, s.k.leases(), 0, -1).Result()
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range leased {
					if err := s.rdb.ZAdd(ctx, s.k.leases(), goredisZ(0, id)).Err(); err != nil {
						t.Fatal(err)
					}
				}
				if rec, err := s.RecoverExpired(ctx, 5); err != nil || rec.Requeued != len(leased) {
					t.Fatalf("recovery once mended: %+v, %v; want the %d leased tasks requeued", rec, err, len(leased))
				}
				got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: len(ids)})
				if err != nil || len(got) != len(ids) {
					t.Fatalf("claim once mended: %d tasks, %v; want all %d", len(got), err, len(ids))
				}
			})
		})
	}
}
