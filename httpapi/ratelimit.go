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
		w.Header().Set("RateLimit", `"default";r=`+strconv.Itoa(res.Remaining)+";t="+strconv.FormatInt(wholeSeconds(reset), 10))
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
	return ceilSeconds(d)
}

func policyHeader(limit int, window time.Duration) string {
	return `"default";q=` + strconv.Itoa(limit) + ";w=" + strconv.FormatInt(wholeSeconds(window), 10)
}
