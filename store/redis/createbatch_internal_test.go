package redis

import (
	"context"
	"testing"

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
		return createArgs{shard: sh, keys: [5]string{sh.task(id), sh.balance("a"), sh.ledger("a"), sh.ownerTasks("a"), sh.sched("a")}, args: [10]any{id, "a", `{"scene":"text-to-image","prompt":"p"}`, "m", 1,
			`{"kind":"charge","amount":-1,"ref":"task:` + id + `","at":`, "", "", "", 0}}
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
