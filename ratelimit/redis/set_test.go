package redis_test

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/ratelimit"
	"github.com/imagegen/imagegen/ratelimit/redis"
)

// TestRealSetMatchesMemory: above MaxLogLimit (a sorted set per key),
// the Redis limiter answers as Memory does, request after request, as
// the clock moves on, by less than a microsecond's worth of digits, and
// back.
func TestRealSetMatchesMemory(t *testing.T) {
	rdb := realRedis(t)
	for _, limit := range []int{65, 100} {
		clock := imagegentest.NewClock(time.Unix(1767312245, 123456000))
		lim := newIsolated(t, rdb, redis.Config{Limit: limit, Window: time.Second, Now: clock.Now})
		mem, _ := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: limit, Window: time.Second, Clock: clock})
		rng := rand.New(rand.NewSource(1))
		for i := range 3000 {
			key := []string{"a", "b"}[rng.Intn(2)]
			switch rng.Intn(10) {
			case 0:
				clock.Advance(time.Duration(rng.Intn(300)) * time.Millisecond)
			case 1:
				clock.Advance(time.Duration(rng.Intn(50)) * time.Microsecond)
			case 2:
				clock.Advance(-time.Duration(rng.Intn(20)) * time.Millisecond)
			}
			r1, err := lim.Allow(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			r2, _ := mem.Allow(context.Background(), key)
			if r1 != r2 {
				t.Fatalf("step %d: redis %+v memory %+v", i, r1, r2)
			}
		}
	}
}
