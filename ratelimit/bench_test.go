package ratelimit_test

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen/ratelimit"
	"github.com/imagegen/imagegen/ratelimit/limitertest"
)

// BenchmarkMemoryAllow calls Allow from GOMAXPROCS goroutines on many
// keys with the real clock. Limit 10/min: after warm-up most calls are
// refusals, as for a busy client over its limit.
func BenchmarkMemoryAllow(b *testing.B) {
	benchmarkMemoryAllow(b, ratelimit.MemoryConfig{}, 10_000)
}

// BenchmarkMemoryAllowAccepted is the same with a limit no key reaches,
// so every call records a request (and expires old ones: the short window
// keeps each key's log small, as 10/min does in production).
func BenchmarkMemoryAllowAccepted(b *testing.B) {
	benchmarkMemoryAllow(b, ratelimit.MemoryConfig{Limit: 1 << 30, Window: 10 * time.Millisecond}, 10_000)
}

// BenchmarkMemoryAllowOneKey is the worst case for contention.
func BenchmarkMemoryAllowOneKey(b *testing.B) {
	benchmarkMemoryAllow(b, ratelimit.MemoryConfig{}, 1)
}

func benchmarkMemoryAllow(b *testing.B, cfg ratelimit.MemoryConfig, keys int) {
	lim, err := ratelimit.NewMemory(cfg)
	if err != nil {
		b.Fatal(err)
	}
	limitertest.Bench(b, lim, keys)
}
