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
		o := observedOf(r.Context()) // authenticate found the caller
		res, err := h.cfg.Limiter.Allow(r.Context(), o.principal.RateKey)
		if err != nil {
			h.respondErr(w, r, fmt.Errorf("rate limiter: %w", err))
			return
		}
		reset := res.Reset
		if !res.Allowed {
			reset = res.RetryAfter
		}
		o.ratePolicy[0] = h.policyOf(res.Limit, res.Window)
		o.rateLimit[0] = rateLimitHeader(res.Remaining, wholeSeconds(reset))
		hdr := w.Header() // the canonical keys, set without an allocation
		hdr["Ratelimit-Policy"] = o.ratePolicy[:]
		hdr["Ratelimit"] = o.rateLimit[:]
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

// policyText is a RateLimit-Policy value and what it says.
type policyText struct {
	limit  int
	window time.Duration
	text   string
}

// policyOf is the RateLimit-Policy value of limit and window, made once
// for as long as the limiter keeps answering with the same policy.
func (h *Handler) policyOf(limit int, window time.Duration) string {
	if p := h.policy.Load(); p != nil && p.limit == limit && p.window == window {
		return p.text
	}
	p := &policyText{limit: limit, window: window, text: policyHeader(limit, window)}
	h.policy.Store(p)
	return p.text
}

// policyHeader is the RateLimit-Policy value, built in one allocation.
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
