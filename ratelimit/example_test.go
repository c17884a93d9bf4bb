package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/ratelimit"
)

func Example() {
	clock := imagegentest.NewClock(time.Time{})
	lim, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: 3, Window: time.Minute, Clock: clock})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 4 {
		res, _ := lim.Allow(ctx, "user-1")
		fmt.Printf("allowed=%v remaining=%d reset=%v retry-after=%v\n",
			res.Allowed, res.Remaining, res.Reset, res.RetryAfter)
		clock.Advance(10 * time.Second)
	}
	clock.Advance(20 * time.Second) // a minute after the first request
	res, _ := lim.Allow(ctx, "user-1")
	fmt.Printf("allowed=%v remaining=%d reset=%v\n", res.Allowed, res.Remaining, res.Reset)
	// Output:
	// allowed=true remaining=2 reset=0s retry-after=0s
	// allowed=true remaining=1 reset=0s retry-after=0s
	// allowed=true remaining=0 reset=40s retry-after=0s
	// allowed=false remaining=0 reset=30s retry-after=30s
	// allowed=true remaining=0 reset=10s
}

func ExampleNewRedis() {
	// miniredis stands in for a Redis server here; its clock is set and
	// moved by hand. Every process that makes a limiter on the same Redis
	// (and Prefix) shares its counts.
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	mr.SetTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	lim, err := ratelimit.NewRedis(rdb, ratelimit.RedisConfig{Limit: 3, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 4 {
		res, err := lim.Allow(ctx, "user-1")
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v remaining=%d reset=%v retry-after=%v\n",
			res.Allowed, res.Remaining, res.Reset, res.RetryAfter)
	}
	// Another process, with its own client, sees the same window.
	other := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer other.Close()
	lim2, err := ratelimit.NewRedis(other, ratelimit.RedisConfig{Limit: 3, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	res, err := lim2.Allow(ctx, "user-1")
	if err != nil {
		panic(err)
	}
	fmt.Printf("other process: allowed=%v retry-after=%v\n", res.Allowed, res.RetryAfter)
	fmt.Println("keys:", mr.Keys())
	mr.FastForward(time.Minute) // idle for a window: the key expires
	fmt.Println("keys after a minute:", mr.Keys())
	// Output:
	// allowed=true remaining=2 reset=0s retry-after=0s
	// allowed=true remaining=1 reset=0s retry-after=0s
	// allowed=true remaining=0 reset=1m0s retry-after=0s
	// allowed=false remaining=0 reset=1m0s retry-after=1m0s
	// other process: allowed=false retry-after=1m0s
	// keys: [{imagegen:rl:user-1}]
	// keys after a minute: []
}
