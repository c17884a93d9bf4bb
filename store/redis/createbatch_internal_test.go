package redis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/groupcommit"
)

// A batch of submits checks each id, those taken before the batch and
// those the batch itself takes: an id sent twice in one batch makes one
// task and is charged once; the second is refused (-1).
func TestCreateBatchRefusesAnIDTakenInTheBatch(t *testing.T) {
	ctx := context.Background()
	s, _ := fundedStore(t, 10)
	args := func(id string) createArgs {
		return submitArgs(t, s, &imagegen.Task{ID: id, Owner: "a", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 1})
	}
	batch := []*groupcommit.Call[createArgs, createResult]{{Req: args("t1")}, {Req: args("t2")}, {Req: args("t1")}}
	s.runShardCreates(ctx, s.shards[0], batch)
	want := []int64{1, 1, -1}
	for i, c := range batch {
		if c.Err != nil || c.Res.code != want[i] {
			t.Fatalf("call %d: code %d, %v; want %d", i, c.Res.code, c.Err, want[i])
		}
	}
	if bal, err := s.Balance(ctx, "a"); err != nil || bal != 8 {
		t.Fatalf("balance %d, %v; want 8 (two tasks charged)", bal, err)
	}
	// And one taken before its batch, by another submit (one made by
	// the same batch is the same submit sent again:
	// TestCreateSentAgainAfterLostReply).
	other := submitArgs(t, s, &imagegen.Task{ID: "t2", Owner: "a", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "q"}, Model: "m", Cost: 1})
	batch = []*groupcommit.Call[createArgs, createResult]{{Req: args("t3")}, {Req: other}}
	s.runShardCreates(ctx, s.shards[0], batch)
	if batch[0].Res.code != 1 || batch[1].Res.code != -1 {
		t.Fatalf("codes %d, %d; want 1, -1", batch[0].Res.code, batch[1].Res.code)
	}
}

// A batch of several owners' submits, interleaved, charges and lists
// each task as its owner's: each owner's keys are named once, and each
// task is matched to its owner by number.
func TestCreateBatchOfSeveralOwners(t *testing.T) {
	ctx := context.Background()
	s, _ := fundedStore(t, 10)
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "b", Kind: imagegen.LedgerGrant, Amount: 1, Ref: "grant:b"}); err != nil {
		t.Fatal(err)
	}
	args := func(owner, id string) createArgs {
		return submitArgs(t, s, &imagegen.Task{ID: id, Owner: owner, Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 1, RequestID: "rid-" + id})
	}
	batch := []*groupcommit.Call[createArgs, createResult]{{Req: args("a", "t1")}, {Req: args("b", "t2")}, {Req: args("a", "t3")}, {Req: args("c", "t4")}, {Req: args("b", "t5")}}
	s.runShardCreates(ctx, s.shards[0], batch)
	want := []int64{1, 1, 1, 0, 0}
	for i, c := range batch {
		if c.Err != nil || c.Res.code != want[i] {
			t.Fatalf("call %d: code %d, %v; want %d", i, c.Res.code, c.Err, want[i])
		}
	}
	for owner, want := range map[string][]string{"a": {"t3", "t1"}, "b": {"t2"}, "c": nil} {
		page, err := s.ListTasks(ctx, owner, "", 10, "")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, task := range page.Tasks {
			if task.Owner != owner || task.RequestID != "rid-"+task.ID || task.Status != imagegen.StatusPending {
				t.Fatalf("owner %s: task %+v", owner, task)
			}
			got = append(got, task.ID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("owner %s lists %v; want %v", owner, got, want)
		}
	}
	for owner, want := range map[string]int64{"a": 8, "b": 0, "c": 0} {
		if bal, err := s.Balance(ctx, owner); err != nil || bal != want {
			t.Fatalf("%s: balance %d, %v; want %d", owner, bal, err, want)
		}
	}
	if entries, err := s.Ledger(ctx, "a"); err != nil || len(entries) != 3 || entries[1].Ref != "task:t1" || entries[2].Ref != "task:t3" || entries[2].BalanceAfter != 8 {
		t.Fatalf("a's ledger %+v, %v", entries, err)
	}
	if st, err := s.QueueStats(ctx); err != nil || st.Pending != 3 {
		t.Fatalf("queue %+v, %v; want 3 pending", st, err)
	}
	// Claims go round the owners by fair share: a, b, a.
	for _, want := range []string{"t1", "t2", "t3"} {
		c, err := s.ClaimTask(ctx, time.Minute)
		if err != nil || c.ID != want {
			t.Fatalf("claimed %v, %v; want %s", c, err, want)
		}
	}
}

// submitArgs is CreateTask's createArgs for t.
func submitArgs(t *testing.T, s *Store, task *imagegen.Task) createArgs {
	t.Helper()
	args, err := s.createArgsOf(task, imagegen.CreateParams{})
	if err != nil {
		t.Fatal(err)
	}
	return args
}

// A batch's owner is debited its tasks' cost at once and given back what
// the refused ones did not spend: the balance and each ledger entry's
// running balance are as if the tasks had been submitted one by one,
// whatever each task's spec (cost, callback, max pending).
func TestCreateBatchGivesBackWhatRefusedTasksDidNotSpend(t *testing.T) {
	ctx := context.Background()
	s, _ := fundedStore(t, 5)
	task := func(id string, cost int64) *imagegen.Task {
		return &imagegen.Task{ID: id, Owner: "a", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: cost}
	}
	hooked := task("t3", 2)
	hooked.Request.CallbackURL = "https://example.com/hook"
	batch := []*groupcommit.Call[createArgs, createResult]{{Req: submitArgs(t, s, task("t1", 3))}, {Req: submitArgs(t, s, task("t2", 3))}, {Req: submitArgs(t, s, hooked)}}
	s.runShardCreates(ctx, s.shards[0], batch)
	for i, want := range []createResult{{code: 1, balance: 2}, {code: 0, balance: 2}, {code: 1, balance: 0}} {
		if got := batch[i].Res; batch[i].Err != nil || got.code != want.code || got.balance != want.balance {
			t.Fatalf("call %d: %+v, %v; want %+v", i, got, batch[i].Err, want)
		}
	}
	if bal, err := s.Balance(ctx, "a"); err != nil || bal != 0 {
		t.Fatalf("balance %d, %v; want 0", bal, err)
	}
	entries, err := s.Ledger(ctx, "a")
	if err != nil || len(entries) != 3 {
		t.Fatalf("ledger %+v, %v", entries, err)
	}
	for i, want := range []imagegen.LedgerEntry{{Ref: "task:t1", Amount: -3, BalanceAfter: 2}, {Ref: "task:t3", Amount: -2, BalanceAfter: 0}} {
		if e := entries[i+1]; e.Ref != want.Ref || e.Amount != want.Amount || e.BalanceAfter != want.BalanceAfter || e.Kind != imagegen.LedgerCharge {
			t.Fatalf("entry %d: %+v; want %+v", i+1, e, want)
		}
	}
	if got, err := s.TaskByID(ctx, "t3"); err != nil || got.Request.CallbackURL != hooked.Request.CallbackURL || got.Cost != 2 {
		t.Fatalf("t3: %+v, %v", got, err)
	}
	// A batch of which every task is refused leaves the balance as it
	// was: a balance of 0 stays a key...
	batch = []*groupcommit.Call[createArgs, createResult]{{Req: submitArgs(t, s, task("t4", 1))}, {Req: submitArgs(t, s, task("t5", 1))}}
	s.runShardCreates(ctx, s.shards[0], batch)
	if batch[0].Res.code != 0 || batch[1].Res.code != 0 {
		t.Fatalf("codes %d, %d; want 0, 0", batch[0].Res.code, batch[1].Res.code)
	}
	if v, err := s.rdb.Get(ctx, s.k.balance("a")).Result(); err != nil || v != "0" {
		t.Fatalf("a's balance key %q, %v; want \"0\"", v, err)
	}
	// ...and an owner who never had a balance gets no key.
	never := task("t6", 1)
	never.Owner = "never-granted"
	if _, err := s.CreateTask(ctx, never, imagegen.CreateParams{}); !errors.Is(err, imagegen.ErrInsufficientCredits) {
		t.Fatalf("never granted: %v; want ErrInsufficientCredits", err)
	}
	if n, err := s.rdb.Exists(ctx, s.k.balance("never-granted"), s.k.ledger("never-granted")).Result(); err != nil || n != 0 {
		t.Fatalf("never granted: %d keys, %v; want none", n, err)
	}
}

// A task whose "task:<id>" reference needs escaping in JSON is charged
// under that reference all the same.
func TestChargeRefThatNeedsEscaping(t *testing.T) {
	ctx := context.Background()
	s, _ := fundedStore(t, 10)
	id := `t"1\<&>`
	if _, err := s.CreateTask(ctx, &imagegen.Task{ID: id, Owner: "a", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 1}, imagegen.CreateParams{}); err != nil {
		t.Fatal(err)
	}
	entries, err := s.Ledger(ctx, "a")
	if err != nil || len(entries) != 2 || entries[1].Ref != imagegen.ChargeRef(id) || entries[1].BalanceAfter != 9 {
		t.Fatalf("ledger %+v, %v", entries, err)
	}
}

// An owner's task index outlives its last task by at least the retention
// and a day, and at most that and indexMargin: its TTL is pushed out
// only once less than that day and retention is left.
func TestOwnerIndexOutlivesItsLastTask(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mr.SetTime(now)
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := New(rdb, Config{Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "a", Kind: imagegen.LedgerGrant, Amount: 100, Ref: "grant:a"}); err != nil {
		t.Fatal(err)
	}
	keep, margin := time.Hour+24*time.Hour, indexMargin(time.Hour)
	if margin != 30*time.Minute {
		t.Fatalf("margin %v; want half the retention", margin)
	}
	for i, step := range []struct {
		after time.Duration // since the last submit
		ttl   time.Duration // the index's TTL after this one
	}{{0, keep + margin}, {20 * time.Minute, keep + 10*time.Minute}, {5 * time.Minute, keep + 5*time.Minute}, {10 * time.Minute, keep + margin}, {3 * time.Hour, keep + margin}} {
		now = now.Add(step.after)
		mr.SetTime(now)
		mr.FastForward(step.after)
		task := &imagegen.Task{ID: fmt.Sprintf("t%d", i), Owner: "a", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 1}
		if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
		if ttl := mr.TTL(s.k.ownerTasks("a")); ttl != step.ttl {
			t.Fatalf("submit %d: index TTL %v; want %v", i, ttl, step.ttl)
		}
	}
}

// TestCreateBatchKeepsOtherOwnersWhenOnesKeysAreSpoiled: an owner whose
// balance, scheduling state, ledger or task index holds a value of the
// wrong kind (which only something other than the store writes) gets an
// error for each of its submits and nothing of them is kept (no charge,
// ledger entry, task or queue entry), whichever of its keys it is and
// however far the batch got; the other owners' submits in the batch are
// made as if it were not there.
func TestCreateBatchKeepsOtherOwnersWhenOnesKeysAreSpoiled(t *testing.T) {
	for name, spoil := range map[string]func(ctx context.Context, s *Store) error{
		"balance of another type": func(ctx context.Context, s *Store) error {
			if err := s.rdb.Del(ctx, s.k.balance("b")).Err(); err != nil {
				return err
			}
			return s.rdb.HSet(ctx, s.k.balance("b"), "x", "1").Err()
		},
		"balance not whole": func(ctx context.Context, s *Store) error { return s.rdb.Set(ctx, s.k.balance("b"), "1.5", 0).Err() },
		"scheduling state":  func(ctx context.Context, s *Store) error { return s.rdb.Set(ctx, s.k.sched("b"), "x", 0).Err() },
		"ledger": func(ctx context.Context, s *Store) error {
			if err := s.rdb.Del(ctx, s.k.ledger("b")).Err(); err != nil {
				return err
			}
			return s.rdb.Set(ctx, s.k.ledger("b"), "x", 0).Err()
		},
		"task index": func(ctx context.Context, s *Store) error { return s.rdb.Set(ctx, s.k.ownerTasks("b"), "x", 0).Err() },
	} {
		t.Run(name, func(t *testing.T) {
			fundedStores(t, 10, func(t *testing.T, s *Store) {
				ctx := context.Background()
				if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "b", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "grant:b"}); err != nil {
					t.Fatal(err)
				}
				if err := spoil(ctx, s); err != nil {
					t.Fatal(err)
				}
				balanceB, _ := s.rdb.Get(ctx, s.k.balance("b")).Result()
				ledgerB, _ := s.rdb.LLen(ctx, s.k.ledger("b")).Result()
				schedB, _ := s.rdb.HGetAll(ctx, s.k.sched("b")).Result()
				task := func(id, owner string) *imagegen.Task {
					return &imagegen.Task{ID: id, Owner: owner, Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 3}
				}
				batch := []*createCall{{Req: submitArgs(t, s, task("t1", "a"))}, {Req: submitArgs(t, s, task("t2", "b"))}, {Req: submitArgs(t, s, task("t3", "a"))}, {Req: submitArgs(t, s, task("t4", "b"))}}
				s.runShardCreates(ctx, s.shards[0], batch)
				for i, want := range []createResult{{code: 1, balance: 7}, {code: -3}, {code: 1, balance: 4}, {code: -3}} {
					if c := batch[i]; c.Err != nil || c.Res.code != want.code || c.Res.balance != want.balance {
						t.Fatalf("call %d: %+v, %v; want %+v", i, c.Res, c.Err, want)
					}
				}
				if _, err := s.CreateTask(ctx, task("t5", "b"), imagegen.CreateParams{}); !errors.Is(err, errOwnerKeys) {
					t.Fatalf("b's submit alone: %v; want errOwnerKeys", err)
				}
				if v, _ := s.rdb.Get(ctx, s.k.balance("b")).Result(); v != balanceB {
					t.Fatalf("b's balance %q; want %q as it was", v, balanceB)
				}
				if n, _ := s.rdb.LLen(ctx, s.k.ledger("b")).Result(); n != ledgerB {
					t.Fatalf("b's ledger has %d entries; want %d as it had", n, ledgerB)
				}
				if sched, _ := s.rdb.HGetAll(ctx, s.k.sched("b")).Result(); !maps.Equal(sched, schedB) {
					t.Fatalf("b's scheduling state %v; want %v as it was", sched, schedB)
				}
				for _, id := range []string{"t2", "t4", "t5"} {
					if n, err := s.rdb.Exists(ctx, s.k.task(id)).Result(); err != nil || n != 0 {
						t.Fatalf("%s: %d, %v; want no task", id, n, err)
					}
				}
				if bal, err := s.Balance(ctx, "a"); err != nil || bal != 4 {
					t.Fatalf("a's balance %d, %v; want 4", bal, err)
				}
				if entries, err := s.Ledger(ctx, "a"); err != nil || len(entries) != 3 {
					t.Fatalf("a's ledger %+v, %v; want the grant and two charges", entries, err)
				}
				for _, k := range []string{s.k.pending(), s.k.fairModel("m"), s.k.allTasks()} {
					if n, err := s.rdb.ZCard(ctx, k).Result(); err != nil || n != 2 {
						t.Fatalf("%s: %d entries, %v; want a's two", k, n, err)
					}
				}
				for _, want := range []string{"t1", "t3"} {
					if c, err := s.ClaimTask(ctx, time.Minute); err != nil || c.ID != want {
						t.Fatalf("claimed %v, %v; want %s", c, err, want)
					}
				}
			})
		})
	}
}

// TestOwnerIndexGetsATTLAfterRetentionIsCut: an index whose recorded
// expiry a longer retention set is pushed out all the same (to what the
// shorter one sets), so that an index that went and was made again
// since has a TTL.
func TestOwnerIndexGetsATTLAfterRetentionIsCut(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	mr.SetTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	submit := func(s *Store, id string) {
		t.Helper()
		task := &imagegen.Task{ID: id, Owner: "a", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 1}
		if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
	}
	long, err := New(rdb, Config{Retention: 30 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := long.AddEntry(ctx, imagegen.LedgerEntry{Owner: "a", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "grant:a"}); err != nil {
		t.Fatal(err)
	}
	submit(long, "t1")
	short, err := New(rdb, Config{Retention: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	mr.Del(short.k.ownerTasks("a")) // the index gone (its tasks expired and a listing emptied it)
	submit(short, "t2")
	want := 2*time.Hour + 24*time.Hour + indexMargin(2*time.Hour)
	if ttl := mr.TTL(short.k.ownerTasks("a")); ttl != want {
		t.Fatalf("index TTL %v; want %v", ttl, want)
	}
}

// An owner undone after its tasks were made (its task index of the wrong
// kind, here with no ledger before the batch, which the undo leaves
// without one) gets an error for every one of its submits, those its
// charges had refused too, and so does a later submit whose id one of
// its tasks had taken in the batch: nothing of it is left, and the id is
// free again.
func TestUndoneOwnerFreesItsSubmitsAndIDs(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if err := s.rdb.Set(ctx, s.k.balance("b"), "4", 0).Err(); err != nil {
			t.Fatal(err)
		}
		spoil(t, s, s.k.ownerTasks("b"))
		task := func(id, owner string) *imagegen.Task {
			return &imagegen.Task{ID: id, Owner: owner, Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 3}
		}
		batch := []*createCall{{Req: submitArgs(t, s, task("t1", "a"))}, {Req: submitArgs(t, s, task("t2", "b"))}, {Req: submitArgs(t, s, task("t3", "b"))}, {Req: submitArgs(t, s, task("t2", "a"))}}
		s.runShardCreates(ctx, s.shards[0], batch)
		for i, want := range []createResult{{code: 1, balance: 7}, {code: -3}, {code: -3}, {code: -3}} {
			if c := batch[i]; c.Err != nil || c.Res.code != want.code || c.Res.balance != want.balance {
				t.Fatalf("call %d: %+v, %v; want %+v", i, c.Res, c.Err, want)
			}
		}
		if v, _ := s.rdb.Get(ctx, s.k.balance("b")).Result(); v != "4" {
			t.Fatalf("b's balance %q; want 4", v)
		}
		for _, k := range []string{s.k.ledger("b"), s.k.sched("b"), s.k.task("t2"), s.k.task("t3")} {
			if n, err := s.rdb.Exists(ctx, k).Result(); err != nil || n != 0 {
				t.Fatalf("%s: %d, %v; want none", k, n, err)
			}
		}
		if _, err := s.CreateTask(ctx, task("t2", "a"), imagegen.CreateParams{}); err != nil {
			t.Fatalf("t2 again: %v; want it made", err)
		}
		for _, want := range []string{"t1", "t2"} {
			if c, err := s.ClaimTask(ctx, time.Minute); err != nil || c.ID != want || c.Owner != "a" {
				t.Fatalf("claimed %+v, %v; want a's %s", c, err, want)
			}
		}
	})
}

// createResults reads each task's balance off its owner's balance before
// the batch and the costs of the owner's tasks created before it, and
// refuses a reply that does not fit the batch.
func TestCreateResults(t *testing.T) {
	call := func(cost int64) *createCall { return &createCall{Req: createArgs{spec: createSpec{cost: cost}}} }
	batch := []*createCall{call(3), call(1), call(2), call(5), call(1), call(1), call(1), call(4)}
	number := []int{1, 2, 1, 1, 2, 1, 2, 1} // owners a (10 before the batch) and b (3)
	// The last, 'r', was charged by an earlier run: made, at the balance as it is.
	if err := createResults(batch, number, 2, []any{int64(42), "cctsfccr", int64(10), int64(3)}); err != nil {
		t.Fatal(err)
	}
	want := []createResult{{1, 7, 42}, {1, 2, 42}, {-1, 0, 42}, {0, 7, 42}, {-2, 2, 42}, {1, 6, 42}, {1, 1, 42}, {1, 6, 42}}
	for i, c := range batch {
		if c.Res != want[i] {
			t.Fatalf("call %d: %+v; want %+v", i, c.Res, want[i])
		}
	}
	for name, reply := range map[string][]any{
		"short codes":          {int64(42), "cc", int64(10), int64(3)},
		"missing owner":        {int64(42), "cctsfccr", int64(10)},
		"unknown code":         {int64(42), "cctsfccx", int64(10), int64(3)},
		"balance not a number": {int64(42), "cctsfccr", "ten", int64(3)}, // a string of one is read (above 2^52)
		"now missing":          {"cctsfccr", int64(10), int64(3), int64(3)},
		"empty":                {},
	} {
		if err := createResults(batch, number, 2, reply); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// A task's score in the fair queue is whole (its tag times 1024 plus the
// queueing count mod 1024), so that Redis keeps it as an integer; a
// claim reads the tag back into vtag, and into vtime for processes of
// the earlier version. A score of the earlier form (tag + count/1024),
// left by an earlier version, sorts first, is claimed first, and does
// not move vtag past the later form's tags.
func TestFairScoresAreWholeAndEarlierOnesClaimFirst(t *testing.T) {
	ctx := context.Background()
	s, rdb := fundedStore(t, 10)
	for _, id := range []string{"t1", "t2"} {
		if _, err := s.CreateTask(ctx, &imagegen.Task{ID: id, Owner: "a", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 1}, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []string{"t1", "t2"} {
		score, err := rdb.ZScore(ctx, s.k.fairModel("m"), id).Result()
		if want := float64((i+1)*1000*1024 + i + 1); err != nil || score != want {
			t.Fatalf("%s: score %v, %v; want %v (tag %d)", id, score, err, want, (i+1)*1000)
		}
	}
	// t1 as an earlier version queued it (in the legacy queue).
	if err := rdb.ZRem(ctx, s.k.fairModel("m"), "t1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, s.k.fair(), goredis.Z{Score: 1000 + 1.0/1024, Member: "t1"}).Err(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct{ id, vtag string }{{"t1", "0"}, {"t2", "2000"}} {
		c, err := s.ClaimTask(ctx, time.Minute)
		if err != nil || c.ID != want.id {
			t.Fatalf("claimed %v, %v; want %s", c, err, want.id)
		}
		for _, k := range []string{s.k.vtag(), s.k.vtime()} {
			if v, err := rdb.Get(ctx, k).Result(); err != nil || v != want.vtag {
				t.Fatalf("after %s: %s %q, %v; want %s", want.id, k, v, err, want.vtag)
			}
		}
	}
}

// A store that an earlier version ran has vtime and no vtag: submits read
// vtime until this version's first claim starts vtag from it; from then
// on vtime, which an earlier version's claim may have misread (a whole
// score taken for a tag: 1024 times too large), is not read.
func TestVtagStartsFromVtimeOnce(t *testing.T) {
	ctx := context.Background()
	s, rdb := fundedStore(t, 10)
	submit := func(id string) float64 {
		t.Helper()
		if _, err := s.CreateTask(ctx, &imagegen.Task{ID: id, Owner: "a", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 1}, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
		score, err := rdb.ZScore(ctx, s.k.fairModel("m"), id).Result()
		if err != nil {
			t.Fatal(err)
		}
		return score
	}
	if err := rdb.Set(ctx, s.k.vtime(), "5000", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := submit("t1"); got != 6000*1024+1 {
		t.Fatalf("t1: score %v; want tag 6000 (vtime 5000 and a stride)", got)
	}
	if c, err := s.ClaimTask(ctx, time.Minute); err != nil || c.ID != "t1" {
		t.Fatalf("claimed %v, %v", c, err)
	}
	if v, err := rdb.Get(ctx, s.k.vtag()).Result(); err != nil || v != "6000" {
		t.Fatalf("vtag %q, %v; want 6000", v, err)
	}
	// An earlier version's claim misreads a whole score as a tag.
	if err := rdb.Set(ctx, s.k.vtime(), "6144002", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := submit("t2"); got != 7000*1024+2 {
		t.Fatalf("t2: score %v; want tag 7000 (vtag 6000 and a stride)", got)
	}
}
