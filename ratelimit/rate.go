package ratelimit

import (
	"fmt"
	"time"

	"github.com/imagegen/imagegen"
)

// The Limit and Window of every limiter's config when left zero.
const (
	defaultLimit  = 10
	defaultWindow = time.Minute
)

// checkRate checks the Limit and Window that every limiter's config has;
// config names it in the error ("RedisConfig").
func checkRate(config string, limit int, window time.Duration) error {
	switch {
	case limit < 0:
		return fmt.Errorf("ratelimit: %s.Limit must not be negative (got %d)", config, limit)
	case window < 0:
		return fmt.Errorf("ratelimit: %s.Window must not be negative (got %v)", config, window)
	}
	return nil
}

// stored is the result of an Allow answered by a store (Redis or
// PostgreSQL): whether it was allowed, how many requests are in the
// window after it, when one more will be allowed and the time it used
// (µs; free is 0 while count < limit).
func stored(allowed bool, limit int, window time.Duration, count int, free, at int64) imagegen.LimitResult {
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
