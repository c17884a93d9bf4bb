package redis_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/ratelimit/redis"
)

func ExampleNew() {
	// miniredis stands in for a Redis server here; its clock is set and
	// moved by hand. Every process that makes a limiter on the same Redis
	// (and Prefix) shares its counts.
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	mr.SetTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	lim, err := redis.New(rdb, redis.Config{Limit: 3, Window: time.Minute})
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
	other := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	defer other.Close()
	lim2, err := redis.New(other, redis.Config{Limit: 3, Window: time.Minute})
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
	// keys: [{imagegen:rl:user-1}:log]
	// keys after a minute: []
}
