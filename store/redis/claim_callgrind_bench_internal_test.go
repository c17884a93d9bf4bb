package redis

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// BenchmarkClaimScript runs claimScript for claims of 1 or 8 tasks of 8
// owners, one claim an op, on a real Redis (IMAGEGEN_TEST_REDIS), the
// queue filled before the timed part with the tasks every op claims and
// 256 more. The claims do not depend on timing, so the server's
// instructions compare one claim script with another exactly
// (redis-server under callgrind, named by IMAGEGEN_BENCH_CALLGRIND: the
// dump is the claims' alone).
func BenchmarkClaimScript(b *testing.B) {
	const owners = 8
	for _, n := range []int{1, 8} {
		b.Run(strconv.Itoa(n)+"-tasks", func(b *testing.B) {
			ctx := context.Background()
			s := fundedBenchStore(b, owners)
			for range (b.N*n + 256 + owners - 1) / owners {
				createBenchBatch(b, s, owners, owners)
			}
			// One claim, as a store that runs has had (it writes vtag).
			if _, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Hour, N: 1}); err != nil {
				b.Fatal(err)
			}
			p := imagegen.ClaimParams{Lease: time.Hour, N: n}
			dump := redistest.Callgrind(b)
			b.ResetTimer()
			for range b.N {
				if got, err := s.ClaimTasks(ctx, p); err != nil || len(got) != n {
					b.Fatalf("claimed %d, %v", len(got), err)
				}
			}
			b.StopTimer()
			dump()
		})
	}
}
