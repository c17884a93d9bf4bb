package ratelimit_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imagegen/imagegen/ratelimit"
)

// BenchmarkMemoryAllow calls Allow from GOMAXPROCS goroutines on many
// keys with the real clock. Limit 10/min: after warm-up most calls are
// refusals, as for a busy client over its limit.
func BenchmarkMemoryAllow(b *testing.B) {
	benchmarkMemoryAllow(b, ratelimit.Config{}, 10_000)
}

// BenchmarkMemoryAllowAccepted is the same with a limit no key reaches,
// so every call records a request (and expires old ones: the short window
// keeps each key's log small, as 10/min does in production).
func BenchmarkMemoryAllowAccepted(b *testing.B) {
	benchmarkMemoryAllow(b, ratelimit.Config{Limit: 1 << 30, Window: 10 * time.Millisecond}, 10_000)
}

// BenchmarkMemoryAllowOneKey is the worst case for contention.
func BenchmarkMemoryAllowOneKey(b *testing.B) {
	benchmarkMemoryAllow(b, ratelimit.Config{}, 1)
}

func benchmarkMemoryAllow(b *testing.B, cfg ratelimit.Config, keys int) {
	lim, err := ratelimit.NewMemory(cfg)
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, keys)
	for i := range names {
		names[i] = "key-" + strconv.Itoa(i)
	}
	ctx := context.Background()
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := next.Add(7919) // spread goroutines over the keys
		for pb.Next() {
			i++
			if _, err := lim.Allow(ctx, names[i%uint64(keys)]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkIPLimiterBlocked is the per-request check for a client with no
// recorded failures (the common case).
func BenchmarkIPLimiterBlocked(b *testing.B) {
	ipl, err := ratelimit.NewIPLimiter(ratelimit.IPConfig{})
	if err != nil {
		b.Fatal(err)
	}
	ipl.Failure("192.0.2.1")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ipl.Blocked("198.51.100.23:40112")
		}
	})
}
