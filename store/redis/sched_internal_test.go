package redis

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// TestSchedulingNumbersThatAreNotNumbersReadAsNone: an owner whose
// scheduling state holds values that are not numbers still submits (in a
// batch with another owner, whose submits go on too), and the batch
// writes the state over with numbers.
func TestSchedulingNumbersThatAreNotNumbersReadAsNone(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "b", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "grant:b"}); err != nil {
			t.Fatal(err)
		}
		if err := s.rdb.HSet(ctx, s.k.sched("b"), "pend", "x", "last", "1e400x").Err(); err != nil {
			t.Fatal(err)
		}
		batch := []*createCall{{Req: submitArgs(t, s, schedTask("t1", "a"))}, {Req: submitArgs(t, s, schedTask("t2", "b"))}, {Req: submitArgs(t, s, schedTask("t3", "b"))}}
		s.runShardCreates(ctx, s.shards[0], batch)
		for i, c := range batch {
			if c.Err != nil || c.Res.code != 1 {
				t.Fatalf("call %d: %+v, %v; want created", i, c.Res, c.Err)
			}
		}
		f, err := s.rdb.HMGet(ctx, s.k.sched("b"), "pend", "last").Result()
		if err != nil {
			t.Fatal(err)
		}
		if f[0] != "2" {
			t.Fatalf("b's pend %v; want 2, its two tasks", f[0])
		}
		if _, err := strconv.ParseInt(f[1].(string), 10, 64); err != nil {
			t.Fatalf("b's last %v: %v; want a whole number", f[1], err)
		}
	})
}

// TestSpoiledSchedulingStateStrandsNoTask: once an owner's scheduling
// state holds a value of another kind (or numbers that are not numbers),
// its tasks queued before are still claimed with their leases (a claim
// that failed after taking them off the queue left them processing with
// no lease: never recovered), given back to the queue and cancelled.
func TestSpoiledSchedulingStateStrandsNoTask(t *testing.T) {
	for name, spoil := range map[string]func(ctx context.Context, s *Store) error{
		"another type": func(ctx context.Context, s *Store) error {
			if err := s.rdb.Del(ctx, s.k.sched("a")).Err(); err != nil {
				return err
			}
			return s.rdb.Set(ctx, s.k.sched("a"), "x", 0).Err()
		},
		"not numbers": func(ctx context.Context, s *Store) error {
			return s.rdb.HSet(ctx, s.k.sched("a"), "pend", "x", "last", "y", "w", "z").Err()
		},
	} {
		t.Run(name, func(t *testing.T) {
			fundedStores(t, 10, func(t *testing.T, s *Store) {
				ctx := context.Background()
				for _, id := range []string{"t1", "t2"} {
					if _, err := s.CreateTask(ctx, schedTask(id, "a"), imagegen.CreateParams{}); err != nil {
						t.Fatal(err)
					}
				}
				if err := spoil(ctx, s); err != nil {
					t.Fatal(err)
				}
				c, err := s.ClaimTask(ctx, time.Minute)
				if err != nil || c.ID != "t1" {
					t.Fatalf("claimed %v, %v; want t1", c, err)
				}
				if _, err := s.rdb.ZScore(ctx, s.k.leases(), "t1").Result(); err != nil {
					t.Fatalf("t1's lease: %v; want one", err)
				}
				if err := s.ReleaseTask(ctx, "t1", c.Attempt); err != nil {
					t.Fatalf("release: %v", err)
				}
				if _, err := s.rdb.ZScore(ctx, s.k.fairModel("m"), "t1").Result(); err != nil {
					t.Fatalf("t1 released: %v; want it queued again", err)
				}
				if refund, err := s.CancelTask(ctx, "a", "t2", imagegen.CancelParams{}); err != nil || refund != 3 {
					t.Fatalf("cancel t2: %d, %v; want 3 back", refund, err)
				}
				if n, err := s.rdb.ZCard(ctx, s.k.fairModel("m")).Result(); err != nil || n != 1 {
					t.Fatalf("fair queue: %d, %v; want t1 alone", n, err)
				}
				if c, err := s.ClaimTask(ctx, time.Minute); err != nil || c.ID != "t1" || c.Attempt != 2 {
					t.Fatalf("claimed %v, %v; want t1's second attempt", c, err)
				}
			})
		})
	}
}

// schedTask is a task of owner costing 3.
func schedTask(id, owner string) *imagegen.Task {
	return &imagegen.Task{ID: id, Owner: owner, Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 3}
}

// TestVtagOfAnotherKindIsWrittenOver: vtag holding a value of another
// kind failed every submit, and every claim after it had leased its
// tasks (each claim used up an attempt of each); now it reads as none
// and the claim writes it over.
func TestVtagOfAnotherKindIsWrittenOver(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		ctx := context.Background()
		for _, key := range []string{s.k.vtag(), s.k.vtime()} {
			if err := s.rdb.HSet(ctx, key, "x", "1").Err(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.CreateTask(ctx, schedTask("t1", "a"), imagegen.CreateParams{}); err != nil {
			t.Fatalf("submit: %v", err)
		}
		if c, err := s.ClaimTask(ctx, time.Minute); err != nil || c.ID != "t1" || c.Attempt != 1 {
			t.Fatalf("claimed %v, %v; want t1's first attempt", c, err)
		}
		if v, err := s.rdb.Get(ctx, s.k.vtag()).Result(); err != nil {
			t.Fatalf("vtag after the claim: %q, %v; want a tag", v, err)
		}
	})
}
