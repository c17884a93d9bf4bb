package redis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// BenchmarkQueuePositionsManyParked: the place of one pending task
// (what a poll with view=full of a pending task asks) on a real Redis
// (IMAGEGEN_TEST_REDIS) whose shard has that many owners parked in
// one model, each at its cap of one with one task parked. The
// positions script counts the model's parked tasks in one set
// (fair:pa:<model>), one ZCOUNT a model; counting each parked owner's
// queue, as at first, cost 1.7 ms with 1,000 parked owners and 9.4 ms
// with 5,000, against 0.13 ms with none.
func BenchmarkQueuePositionsManyParked(b *testing.B) {
	rdb := redistest.Connect(b)
	for _, parked := range []int{0, 1000, 5000} {
		b.Run(fmt.Sprint(parked), func(b *testing.B) {
			ctx := context.Background()
			s, err := New(rdb, Config{Retention: time.Hour, Prefix: "imagegen-test-" + uuid.NewString()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { redistest.DeleteKeysOf(b, rdb, s) })
			owners := make([]string, parked)
			for i := range owners {
				owners[i] = fmt.Sprintf("o%05d", i)
				if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owners[i], Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"}); err != nil {
					b.Fatal(err)
				}
			}
			for range 2 {
				for _, owner := range owners {
					if _, err := s.CreateTask(ctx, schedTask(owner+"-"+uuid.NewString(), owner), imagegen.CreateParams{}); err != nil {
						b.Fatal(err)
					}
				}
			}
			claim := imagegen.ClaimParams{Lease: time.Hour, N: 64, Limits: capOne}
			for {
				got, err := s.ClaimTasks(ctx, claim)
				if err != nil && err != imagegen.ErrNoTask {
					b.Fatal(err)
				}
				if n, _ := s.rdb.ZCard(ctx, s.k.fairModel("m")).Result(); len(got) == 0 && n == 0 {
					break
				}
			}
			if n, _ := s.rdb.ZCard(ctx, s.k.parkedOwners("m")).Result(); int(n) != parked {
				b.Fatalf("%d parked owners; want %d", n, parked)
			}
			if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "z", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"}); err != nil {
				b.Fatal(err)
			}
			if _, err := s.CreateTask(ctx, schedTask("z-probe", "z"), imagegen.CreateParams{}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := s.QueuePositions(ctx, []string{"z-probe"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
