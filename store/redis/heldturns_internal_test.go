package redis

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/groupcommit"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// heldBacklogStore is a funded store (owners a, d, e and f) whose model
// "slow" has a backlog of owner a's, s1 to s3 (tags 1000 to 3000),
// while vtag, the largest tag claimed, is 50000: other models ran while
// "slow" was held back.
func heldBacklogStore(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	for _, owner := range []string{"d", "e", "f"} {
		if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 10, Ref: "grant:" + owner}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"s1", "s2", "s3"} {
		if _, err := s.CreateTask(ctx, heldTask(id, "a", "slow"), imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.rdb.Set(ctx, s.k.vtag(), "50000", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func heldTask(id, owner, model string) *imagegen.Task {
	return &imagegen.Task{ID: id, Owner: owner, Model: model, Cost: 1,
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
}

// tagOf is the fair-share tag of a pending task of model.
func tagOf(t *testing.T, s *Store, model, id string) int64 {
	t.Helper()
	score, err := s.rdb.ZScore(context.Background(), s.k.fairModel(model), id).Result()
	if err != nil {
		t.Fatalf("%s's score in %s's queue: %v", id, model, err)
	}
	return int64(score) / 1024
}

// A batch's tasks for a model whose queue is behind vtag are tagged
// from one less than the tag at its head (storekit.QueueBase), each as
// if submitted on its own; a model whose queue is empty, from vtag. A
// task given back to the queue (here released) is tagged by the same
// rule.
func TestTagsFromTheHeadOfAHeldModelsQueue(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		ctx := context.Background()
		heldBacklogStore(t, s)
		batch := []*groupcommit.Call[createArgs, createResult]{
			{Req: submitArgs(t, s, heldTask("d1", "d", "slow"))},
			{Req: submitArgs(t, s, heldTask("d2", "d", "slow"))},
			{Req: submitArgs(t, s, heldTask("e1", "e", "slow"))},
			{Req: submitArgs(t, s, heldTask("f1", "f", "fast"))},
		}
		s.runShardCreates(ctx, s.shards[0], batch)
		for i, c := range batch {
			if c.Err != nil || c.Res.code != 1 {
				t.Fatalf("call %d: %+v, %v", i, c.Res, c.Err)
			}
		}
		for _, want := range []struct {
			model, id string
			tag       int64
		}{
			{"slow", "d1", 1999}, // one less than the head, s1's 1000, and a stride
			{"slow", "d2", 2999}, // after d's last
			{"slow", "e1", 1999},
			{"fast", "f1", 51000}, // an empty queue: vtag and a stride
		} {
			if got := tagOf(t, s, want.model, want.id); got != want.tag {
				t.Errorf("%s: tag %d; want %d", want.id, got, want.tag)
			}
		}

		// Claimed in tag order (then queueing order): s1, d1, e1. Given
		// back, e1 (its owner has no other task pending) is tagged from
		// one less than the head, now s2's 2000; s1 after its owner's
		// last, 3000 (not after vtag, which the claims left at 50000).
		claimed := map[string]*imagegen.Task{}
		for _, want := range []string{"s1", "d1", "e1"} {
			c, err := s.ClaimTask(ctx, time.Minute)
			if err != nil || c.ID != want {
				t.Fatalf("claimed %v, %v; want %s", c, err, want)
			}
			claimed[c.ID] = c
		}
		for _, id := range []string{"e1", "s1"} {
			if err := s.ReleaseTask(ctx, id, claimed[id].Attempt); err != nil {
				t.Fatal(err)
			}
		}
		if got := tagOf(t, s, "slow", "e1"); got != 2999 {
			t.Errorf("e1 released: tag %d; want 2999", got)
		}
		if got := tagOf(t, s, "slow", "s1"); got != 4000 {
			t.Errorf("s1 released: tag %d; want 4000", got)
		}
	})
}

// A batch reads the head of each of its models' queues once, however
// many of its tasks each model has: one ZRANGE a model. Counted in INFO
// commandstats of a server of the test's own.
func TestCreateBatchReadsEachModelsHeadOnce(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.StartServer(t, 0).Client(t)
	s := fundedStoreOn(t, rdb, "imagegen-test-"+uuid.NewString(), 10)
	heldBacklogStore(t, s)
	var batch []*groupcommit.Call[createArgs, createResult]
	for i := range 8 {
		owner, model := []string{"d", "e"}[i%2], []string{"slow", "fast"}[i/4]
		batch = append(batch, &groupcommit.Call[createArgs, createResult]{Req: submitArgs(t, s, heldTask("t"+strconv.Itoa(i), owner, model))})
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	s.runShardCreates(ctx, s.shards[0], batch)
	for i, c := range batch {
		if c.Err != nil || c.Res.code != 1 {
			t.Fatalf("call %d: %+v, %v", i, c.Res, c.Err)
		}
	}
	zranges := redistest.ScriptCalls(t, rdb)["zrange"]
	if zranges != 2 {
		t.Fatalf("the batch of two models made %d ZRANGEs; want 2", zranges)
	}
}
