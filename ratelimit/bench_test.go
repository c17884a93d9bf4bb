package ratelimit_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/ratelimit"
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
	benchmarkAllow(b, lim, keys)
}

// BenchmarkRedisAllow calls Allow from GOMAXPROCS goroutines on many keys
// against miniredis (an in-process fake: this measures the client, the
// script and the Go side, not a real server).
func BenchmarkRedisAllow(b *testing.B) {
	_, rdb := newMiniredis(b)
	benchmarkAllow(b, newRedis(b, rdb, ratelimit.RedisConfig{}), 10_000)
}

// BenchmarkRedisAllowReal is the same on the Redis server named by
// IMAGEGEN_TEST_REDIS, beside a bare EVALSHA of a one-key script that
// does no work, as the baseline of one round trip.
func BenchmarkRedisAllowReal(b *testing.B) {
	rdb := realRedis(b)
	b.Run("Allow", func(b *testing.B) {
		benchmarkAllow(b, newIsolated(b, rdb, ratelimit.RedisConfig{}), 10_000)
	})
	b.Run("AllowOneKey", func(b *testing.B) {
		benchmarkAllow(b, newIsolated(b, rdb, ratelimit.RedisConfig{}), 1)
	})
	b.Run("BareEvalSHA", func(b *testing.B) {
		noop := redis.NewScript(`return {0, redis.call('EXISTS', KEYS[1]), 0, 0}`)
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := noop.Run(ctx, rdb, []string{"{imagegen-bench:none}"}, "", "60000000", "10", "60000").Err(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// benchmarkAllow calls Allow from GOMAXPROCS goroutines, spread over
// that many keys.
func benchmarkAllow(b *testing.B, lim imagegen.Limiter, keys int) {
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
