// Package retry is the retry arithmetic that every part of imagegen
// shares: the exponential backoff of workers, webhook deliveries and
// provider adapters (Backoff), the growing poll and reconnect intervals
// of the client, the command line and the PostgreSQL listener
// (Doubling), and the reading of a server's Retry-After (After).
package retry

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backoff is the wait before retry number n (0 for the first retry):
// base doubled per retry, capped at maxDelay. With jitter its upper half
// is random, so that many callers retrying together spread out.
func Backoff(n int, base, maxDelay time.Duration, jitter bool) time.Duration {
	d := base
	for i := 0; i < n && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	if !jitter || d < 2 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// Doubling hands out waits that double from Min up to Max, for polling
// and reconnecting: Next returns the wait to make now (Min the first
// time), and Reset starts again from Min. The zero Doubling with Min and
// Max set is ready; it is not safe for concurrent use.
type Doubling struct {
	Min, Max time.Duration
	next     time.Duration
}

// Next returns the wait to make now and doubles the one after it.
func (d *Doubling) Next() time.Duration {
	cur := min(max(d.next, d.Min), d.Max)
	d.next = min(cur*2, d.Max)
	return cur
}

// Reset makes the next wait Min again.
func (d *Doubling) Reset() { d.next = 0 }

// After reads the delay a server asks for: "Retry-After-Ms"
// (milliseconds, as OpenAI sends), else "Retry-After" in seconds (a
// decimal fraction is accepted) or as an HTTP date, relative to now. It
// reports false when neither is usable.
func After(h http.Header, now time.Time) (time.Duration, bool) {
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
		if !(s >= 0 && s <= 1e9) { // NaN, which ParseFloat reads, included
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
