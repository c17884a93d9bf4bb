package redis

import (
	"context"
	"slices"
	"testing"
	"time"

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
		sh := s.byOwner("a")
		return createArgs{shard: sh, owner: "a", id: id, task: sh.task(id), ownerKeys: [4]string{sh.balance("a"), sh.ledger("a"), sh.ownerTasks("a"), sh.sched("a")},
			args: [8]any{`{"scene":"text-to-image","prompt":"p"}`, "m", 1, `{"kind":"charge","amount":-1,"ref":"task:` + id + `","at":`, "", "", "", 0}}
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
	// And one taken before its batch.
	batch = []*groupcommit.Call[createArgs, createResult]{{Req: args("t3")}, {Req: args("t2")}}
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
		sh := s.byOwner(owner)
		return createArgs{shard: sh, owner: owner, id: id, task: sh.task(id), ownerKeys: [4]string{sh.balance(owner), sh.ledger(owner), sh.ownerTasks(owner), sh.sched(owner)},
			args: [8]any{`{"scene":"text-to-image","prompt":"p"}`, "m", 1, `{"kind":"charge","amount":-1,"ref":"task:` + id + `","at":`, "", "", "rid-" + id, 0}}
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
