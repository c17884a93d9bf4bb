// Package rolling holds what every rolling-window limiter of imagegen
// shares: the defaults of Limit and Window, their validation, and the
// result of an Allow answered by a store (Redis or PostgreSQL).
package rolling

import (
	"fmt"
	"time"

	"github.com/imagegen/imagegen"
)

// The Limit and Window of every limiter's config when left zero.
const (
	DefaultLimit  = 10
	DefaultWindow = time.Minute
)

// Check checks the Limit and Window that every limiter's config has; pkg
// and config name them in the error ("ratelimit/redis", "Config").
func Check(pkg, config string, limit int, window time.Duration) error {
	switch {
	case limit < 0:
		return fmt.Errorf("%s: %s.Limit must not be negative (got %d)", pkg, config, limit)
	case window < 0:
		return fmt.Errorf("%s: %s.Window must not be negative (got %v)", pkg, config, window)
	}
	return nil
}

// Stored is the result of an Allow answered by a store (Redis or
// PostgreSQL): whether it was allowed, how many requests are in the
// window after it, when one more will be allowed and the time it used
// (µs; free is 0 while count < limit).
func Stored(allowed bool, limit int, window time.Duration, count int, free, at int64) imagegen.LimitResult {
	res := imagegen.LimitResult{Allowed: allowed, Limit: limit, Window: window}
	if count < limit {
		res.Remaining = limit - count
	} else {
		res.Reset = time.Duration(free-at) * time.Microsecond
		if !allowed {
			res.RetryAfter = res.Reset
		}
	}
	return res
}
