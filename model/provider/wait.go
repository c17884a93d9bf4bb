package provider

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
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
// many callers spread out.
func Backoff(retry int, base, maxDelay time.Duration) time.Duration {
	d := base
	for i := 0; i < retry && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	if d < 2 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// RetryAfter reads the delay a server asks for: "retry-after-ms"
// (milliseconds, as OpenAI sends), else "Retry-After" in seconds or as an
// HTTP date (relative to now). It reports false when neither is usable.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > 1e9 {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
