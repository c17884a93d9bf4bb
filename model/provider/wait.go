package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/imagegen/imagegen"
	retrypkg "github.com/imagegen/imagegen/internal/retry"
)

// ErrPastDeadline: waiting would end after the context's deadline.
var ErrPastDeadline = errors.New("the wait would pass the context deadline")

// Wait waits d on clock, for backoffs and polling. It returns at once
// with ErrPastDeadline if ctx has a deadline sooner than d from now, and
// with ctx's error if ctx ends first. Context deadlines are wall-clock
// times, so the check uses the real time even when clock is a fake.
func Wait(ctx context.Context, clock imagegen.Clock, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
		return fmt.Errorf("%w (%v)", ErrPastDeadline, d)
	}
	select {
	case <-clock.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Backoff is the wait before retry number retry (0 for the first): base
// doubled per retry, capped at maxDelay, its upper half random so that
// many callers spread out (the backoff all of imagegen shares).
func Backoff(retry int, base, maxDelay time.Duration) time.Duration {
	return retrypkg.Backoff(retry, base, maxDelay, true)
}

// RetryAfter reads the delay a server asks for: "retry-after-ms"
// (milliseconds, as OpenAI sends), else "Retry-After" in seconds or as an
// HTTP date (relative to now). It reports false when neither is usable.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	return retrypkg.After(h, now)
}
