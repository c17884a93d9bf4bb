package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// limitRate applies the per-key limit to an authenticated request and
// writes the RateLimit header (IETF httpapi ratelimit-headers draft):
//
//	RateLimit-Policy: "default";q=10;w=60
//	RateLimit: "default";r=9;t=0
//
// r is what is left in the window and t the seconds until one more
// request is allowed. A refused request gets 429 with Retry-After.
func (h *Handler) limitRate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		res, err := h.cfg.Limiter.Allow(r.Context(), p.RateKey)
		if err != nil {
			h.respondErr(w, r, fmt.Errorf("rate limiter: %w", err))
			return
		}
		reset := res.Reset
		if !res.Allowed {
			reset = res.RetryAfter
		}
		w.Header().Set("RateLimit-Policy", policyHeader(res.Limit, res.Window))
		w.Header().Set("RateLimit", rateLimitHeader(res.Remaining, wholeSeconds(reset)))
		if !res.Allowed {
			writeRateLimited(w, res.RetryAfter, fmt.Sprintf("rate limit exceeded: at most %d requests per %s per API key", res.Limit, res.Window))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// wholeSeconds rounds d up to whole seconds (0 stays 0).
func wholeSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return RetryAfterSeconds(d)
}

// policyHeader is the RateLimit-Policy value, built in one allocation
// (it is on every authenticated answer).
func policyHeader(limit int, window time.Duration) string {
	var b [64]byte
	s := append(b[:0], `"default";q=`...)
	s = strconv.AppendInt(s, int64(limit), 10)
	s = append(s, ";w="...)
	s = strconv.AppendInt(s, wholeSeconds(window), 10)
	return string(s)
}

// rateLimitHeader is the RateLimit value, built in one allocation.
func rateLimitHeader(remaining int, resetSeconds int64) string {
	var b [64]byte
	s := append(b[:0], `"default";r=`...)
	s = strconv.AppendInt(s, int64(remaining), 10)
	s = append(s, ";t="...)
	s = strconv.AppendInt(s, resetSeconds, 10)
	return string(s)
}
