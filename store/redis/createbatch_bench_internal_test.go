package redis

import (
	"context"
	"strconv"
	"testing"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// BenchmarkCreateBatch runs createScript for batches of a fixed make-up
// (1, 8 or 32 tasks of one owner, or 8 of 8 owners), one batch an op, on a real
// Redis (IMAGEGEN_TEST_REDIS). The batches do not depend on timing, so
// the server's instructions a batch compare one script with another
// exactly (redis-server under callgrind, named by
// IMAGEGEN_BENCH_CALLGRIND: the dump is the batches' alone).
func BenchmarkCreateBatch(b *testing.B) {
	for _, shape := range []struct{ size, owners int }{{1, 1}, {8, 1}, {32, 1}, {8, 8}} {
		size, owners := shape.size, shape.owners
		b.Run("size="+strconv.Itoa(size)+"/owners="+strconv.Itoa(owners), func(b *testing.B) {
			ctx := context.Background()
			rdb := redistest.Connect(b)
			s, err := New(rdb, Config{Prefix: "imagegen-bench-" + uuid.NewString()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { redistest.DeleteKeys(b, rdb, s.KeyPattern()) })
			for o := range owners {
				owner := "owner-" + strconv.Itoa(o)
				if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 1 << 50, Ref: "grant:" + owner}); err != nil {
					b.Fatal(err)
				}
			}
			batch := make([]*createCall, size)
			run := func() {
				for i := range batch {
					task := &imagegen.Task{ID: uuid.NewString(), Owner: "owner-" + strconv.Itoa(i%owners), Model: "placeholder", Cost: 1,
						Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse on a cliff at dusk, oil painting"}}
					args, err := s.createArgsOf(task, imagegen.CreateParams{})
					if err != nil {
						b.Fatal(err)
					}
					batch[i] = &createCall{Req: args}
				}
				s.runShardCreates(ctx, s.shards[0], batch)
				for _, c := range batch {
					if c.Err != nil || c.Res.code != 1 {
						b.Fatalf("%+v, %v", c.Res, c.Err)
					}
				}
			}
			// Past the size at which Redis keeps a sorted set as a
			// listpack (128 by default), whose inserts cost more the
			// longer it is: every set in the steady state of a busy
			// store.
			for range (200*owners + size - 1) / size {
				run()
			}
			b.ReportAllocs()
			dump := redistest.Callgrind(b)
			b.ResetTimer()
			for range b.N {
				run()
			}
			b.StopTimer()
			dump()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(size*b.N), "ns/task")
		})
	}
}
