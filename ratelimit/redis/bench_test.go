package redis_test

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/ratelimit/limitertest"
	"github.com/imagegen/imagegen/ratelimit/redis"
)

// BenchmarkAllow calls Allow from GOMAXPROCS goroutines on many keys
// against miniredis (an in-process fake: this measures the client, the
// script and the Go side, not a real server).
func BenchmarkAllow(b *testing.B) {
	_, rdb := newMiniredis(b)
	limitertest.Bench(b, newRedis(b, rdb, redis.Config{}), 10_000)
}

// BenchmarkAllowReal is the same on the Redis server named by
// IMAGEGEN_TEST_REDIS, beside a bare EVALSHA of a one-key script that
// does no work, as the baseline of one round trip.
func BenchmarkAllowReal(b *testing.B) {
	rdb := realRedis(b)
	b.Run("Allow", func(b *testing.B) {
		limitertest.Bench(b, newIsolated(b, rdb, redis.Config{}), 10_000)
	})
	b.Run("AllowOneKey", func(b *testing.B) {
		limitertest.Bench(b, newIsolated(b, rdb, redis.Config{}), 1)
	})
	b.Run("BareEvalSHA", func(b *testing.B) {
		noop := goredis.NewScript(`return {0, redis.call('EXISTS', KEYS[1]), 0, 0}`)
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
