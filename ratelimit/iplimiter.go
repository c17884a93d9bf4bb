package ratelimit

import (
	"fmt"
	"math"
	"time"

	"golang.org/x/time/rate"

	"github.com/imagegen/imagegen"
)

// IPLimiter limits failed authentications per client, so API keys cannot
// be brute-forced. A client is an IPv4 address or an IPv6 /64. Each client
// has a token bucket (golang.org/x/time/rate): every failure takes a
// token, tokens refill at Rate up to Burst, and a client with less than
// one token is blocked until it has one again.
//
// The HTTP layer uses it in two steps around authentication:
//
//	if wait, blocked := ipl.Blocked(r.RemoteAddr); blocked {
//		// 429 with Retry-After: wait, before any key lookup
//	}
//	if !authenticated {
//		ipl.Failure(r.RemoteAddr)
//		// 401
//	}
//
// Successful authentications cost nothing, so many users behind one
// address are not limited by each other's traffic. Failures that were in
// flight when a client became blocked are still charged, taking its bucket
// below zero, so a flood of concurrent guesses earns a longer block rather
// than slipping through.
//
// It is safe for concurrent use. Blocked is on every request's path: it
// takes one short shard lock and never allocates. Clients whose bucket has
// refilled carry no state and are dropped.
type IPLimiter struct {
	rate    rate.Limit
	burst   int
	clock   imagegen.Clock
	clients *table[clientKey, rate.Limiter]
}

// NewIPLimiter returns an IPLimiter configured by cfg, with defaults for
// its zero fields.
func NewIPLimiter(cfg IPLimiterConfig) (*IPLimiter, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("ratelimit.NewIPLimiter: %w", err)
	}
	cfg = cfg.withDefaults()
	l := &IPLimiter{rate: cfg.Rate, burst: cfg.Burst, clock: cfg.Clock}
	l.clients = newTable(cfg.MaxClients, hashClientKey,
		func(b *rate.Limiter, now time.Time) bool { return b.TokensAt(now) >= float64(l.burst) },
		func(b *rate.Limiter, now time.Time) float64 { return -b.TokensAt(now) },
	)
	return l, nil
}

// Blocked reports whether the client at addr has used up its allowance of
// failed authentications and, if so, how long until it may try again.
// addr is an IP address, with or without a port (http.Request.RemoteAddr
// works as is); addresses that do not parse all share one allowance.
// Blocked records nothing: call it before looking the key up.
func (l *IPLimiter) Blocked(addr string) (retryAfter time.Duration, blocked bool) {
	k := clientKeyOf(addr)
	s := l.clients.shardFor(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.get(k)
	if b == nil {
		return 0, false // the common case: no recent failures
	}
	now := l.clock.Now()
	tokens := b.TokensAt(now)
	if tokens >= 1 {
		return 0, false
	}
	return l.untilOneToken(b, tokens, now), true
}

// Failure records a failed authentication from the client at addr. Call it
// only for requests that Blocked let through.
func (l *IPLimiter) Failure(addr string) {
	now := l.clock.Now()
	k := clientKeyOf(addr)
	s := l.clients.shardFor(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.get(k)
	if b == nil {
		b = rate.NewLimiter(l.rate, l.burst)
		s.insert(k, b, now)
	}
	// ReserveN, unlike AllowN, takes the token even when none is left, so
	// failures beyond the burst deepen the debt.
	b.ReserveN(now, 1)
}

// Len reports how many clients are tracked, including ones whose bucket
// has refilled but that have not been swept out yet.
func (l *IPLimiter) Len() int { return l.clients.len() }

// untilOneToken returns how long b, holding tokens (< 1) at now, takes to
// refill to one token: the shortest wait, to the nanosecond, after which
// the client is let through. The loops absorb float rounding (a few ns).
func (l *IPLimiter) untilOneToken(b *rate.Limiter, tokens float64, now time.Time) time.Duration {
	ns := math.Round((1 - tokens) / float64(l.rate) * float64(time.Second))
	if ns >= math.MaxInt64/2 {
		return math.MaxInt64 / 2 // absurdly slow rates: effectively forever
	}
	wait := max(time.Duration(ns), 1)
	for b.TokensAt(now.Add(wait)) < 1 {
		wait++
	}
	for wait > 1 && b.TokensAt(now.Add(wait-1)) >= 1 {
		wait--
	}
	return wait
}
