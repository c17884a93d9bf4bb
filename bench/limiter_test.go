package bench

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redislimit "github.com/imagegen/imagegen/ratelimit/redis"
)

// BenchmarkRedisLimiter measures the Redis rate limiter's Allow as a
// server sees it under an API's load: 16 goroutines a CPU calling Allow,
// reported with the server's CPU time a call (rediscpu-µs/op).
//
//   - log: serve's default limit (10 a minute, one log string a key),
//     each key taking nine requests in turn, so that none is refused,
//     as BenchmarkServerCPU's redis-default-limit spreads its submits;
//   - set: a limit of 10^8 a minute (a sorted set a key) on 30 keys.
func BenchmarkRedisLimiter(b *testing.B) {
	opt := redisOptions(b)
	for _, tt := range []struct {
		name  string
		limit int
		key   func(i int64) string
	}{
		{"log", 0, func(i int64) string { return strconv.FormatInt(i/9, 10) }},
		{"set", 100_000_000, func(i int64) string { return strconv.FormatInt(i%30, 10) }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			rdb := redistest.NewClient(b, opt)
			lim, err := redislimit.New(rdb, redislimit.Config{Limit: tt.limit, Prefix: "imagegen-bench-" + uuid.NewString() + ":"})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { redistest.DeleteKeys(b, rdb, lim.KeyPattern()) })
			var next atomic.Int64
			report := redisCPU(b, opt).start()
			timeParallel(b, func() error {
				res, err := lim.Allow(ctx, tt.key(next.Add(1)-1))
				if err == nil && !res.Allowed {
					err = fmt.Errorf("refused: %+v", res)
				}
				return err
			})
			b.StopTimer()
			report()
		})
	}
}
