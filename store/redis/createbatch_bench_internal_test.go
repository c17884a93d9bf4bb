package redis

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// BenchmarkCreateBatch runs createScript for batches of a fixed make-up
// (1, 8 or 32 tasks of one owner, or 8 tasks of 8 owners), one batch an op,
// on a real Redis (IMAGEGEN_TEST_REDIS). The batches do not depend on
// timing, so the server's instructions a batch compare one script with
// another exactly (redis-server under callgrind, named by
// IMAGEGEN_BENCH_CALLGRIND: the dump is the batches' alone).
//
// The store is first filled past the size at which Redis keeps a sorted
// set as a listpack (128 entries by default), as a busy store's are,
// except in short-queue: there each op also claims the 8 tasks it made,
// so that the fair queue stays at 64 tasks, a listpack, as a queue that
// the workers keep up with does (a listpack's inserts cost more the
// longer it is).
func BenchmarkCreateBatch(b *testing.B) {
	for _, shape := range []struct {
		name         string
		size, owners int
		short        bool
	}{{"1-task", 1, 1, false}, {"8-tasks", 8, 1, false}, {"32-tasks", 32, 1, false}, {"8-owners", 8, 8, false}, {"8-owners-short-queue", 8, 8, true}} {
		size, owners := shape.size, shape.owners
		b.Run(shape.name, func(b *testing.B) {
			ctx := context.Background()
			s := fundedBenchStore(b, owners)
			create := func() { createBenchBatch(b, s, size, owners) }
			op := create
			fill := 200 * owners
			if shape.short {
				fill = 64
				op = func() {
					create()
					if got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Hour, N: size}); err != nil || len(got) != size {
						b.Fatalf("claimed %d, %v", len(got), err)
					}
				}
			}
			for range (fill + size - 1) / size {
				create()
			}
			// One claim, as a store that runs has had: it writes vtag,
			// which submits read from then on.
			if _, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Hour, N: 1}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			dump := redistest.Callgrind(b)
			b.ResetTimer()
			for range b.N {
				op()
			}
			b.StopTimer()
			dump()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(size*b.N), "ns/task")
		})
	}
}

// fundedBenchStore is a store on the Redis of IMAGEGEN_TEST_REDIS under
// a fresh prefix (its keys deleted afterwards) whose owners "owner-0"
// to "owner-<owners-1>" each have a balance no benchmark runs out of.
func fundedBenchStore(b *testing.B, owners int) *Store {
	rdb := redistest.Connect(b)
	s, err := New(rdb, Config{Prefix: "imagegen-bench-" + uuid.NewString()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { redistest.DeleteKeysOf(b, rdb, s) })
	for o := range owners {
		owner := "owner-" + strconv.Itoa(o)
		if _, err := s.AddEntry(context.Background(), imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 1 << 50, Ref: "grant:" + owner}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// createBenchBatch runs createScript for one batch of size tasks of
// fundedBenchStore's owners in turn, each of which must be created.
func createBenchBatch(b *testing.B, s *Store, size, owners int) {
	batch := make([]*createCall, size)
	for i := range batch {
		task := &imagegen.Task{ID: uuid.NewString(), Owner: "owner-" + strconv.Itoa(i%owners), Model: "placeholder", Cost: 1,
			Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse on a cliff at dusk, oil painting"}}
		args, err := s.createArgsOf(task, imagegen.CreateParams{})
		if err != nil {
			b.Fatal(err)
		}
		batch[i] = &createCall{Req: args}
	}
	s.runShardCreates(context.Background(), s.shards[0], batch)
	for _, c := range batch {
		if c.Err != nil || c.Res.code != 1 {
			b.Fatalf("%+v, %v", c.Res, c.Err)
		}
	}
}
