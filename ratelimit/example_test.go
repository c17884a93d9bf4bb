package ratelimit_test

import (
	"context"
	"fmt"
	"time"

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
