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
	lim, err := ratelimit.NewMemory(ratelimit.Config{Limit: 3, Window: time.Minute, Clock: clock})
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

func ExampleIPLimiter() {
	clock := imagegentest.NewClock(time.Time{})
	ipl, err := ratelimit.NewIPLimiter(ratelimit.IPConfig{Rate: 1, Burst: 2, Clock: clock})
	if err != nil {
		panic(err)
	}
	remoteAddr := "[2001:db8:1:2::77]:50312" // as in http.Request.RemoteAddr
	for range 3 {
		if wait, blocked := ipl.Blocked(remoteAddr); blocked {
			fmt.Println("429, retry after", wait)
			continue
		}
		// ... the API key was looked up and is wrong:
		ipl.Failure(remoteAddr)
		fmt.Println("401")
	}
	// Another address in the same /64 is the same client.
	_, blocked := ipl.Blocked("2001:db8:1:2::99")
	fmt.Println("same /64 blocked:", blocked)
	// Output:
	// 401
	// 401
	// 429, retry after 1s
	// same /64 blocked: true
}
