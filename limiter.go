package imagegen

import (
	"context"
	"time"
)

// Limiter decides whether a caller may make one more request.
// Implementations live in ratelimit/ and pass its shared test suite.
type Limiter interface {
	// Allow records one request for key if it is allowed.
	Allow(ctx context.Context, key string) (LimitResult, error)
}

// LimitResult is a limiter's answer, with what the RateLimit headers need.
type LimitResult struct {
	Allowed    bool
	Limit      int           // requests allowed per window
	Window     time.Duration // length of the rolling window
	Remaining  int           // requests left in the window after this one
	Reset      time.Duration // until one more request is allowed (0 if Remaining > 0)
	RetryAfter time.Duration // when refused: until a request is allowed again
}
