package ratelimit

import (
	"context"
	"fmt"
	"hash/maphash"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
)

var _ imagegen.Limiter = (*Memory)(nil)

// Memory is an in-process limiter: each key may make at most Limit
// requests in any rolling Window. It keeps an exact sliding log per key
// (the times of the key's last Limit accepted requests), so there is no
// burst at window boundaries and answers are exact to the nanosecond.
//
// It is safe for concurrent use. Allow takes one short lock on a shard
// picked by the key's hash and does not allocate for a key it already
// tracks. Memory stays bounded: keys idle for a whole Window are dropped
// and at most MemoryConfig.MaxKeys keys are tracked.
type Memory struct {
	limit  int
	window time.Duration
	clock  imagegen.Clock
	epoch  time.Time // stamps are offsets from it
	keys   *table[string, slidingLog]
}

// NewMemory returns a Memory limiter configured by cfg, with defaults for
// its zero fields.
func NewMemory(cfg MemoryConfig) (*Memory, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("ratelimit.NewMemory: %w", err)
	}
	cfg = cfg.withDefaults()
	m := &Memory{
		limit:  cfg.Limit,
		window: cfg.Window,
		clock:  cfg.Clock,
		epoch:  cfg.Clock.Now(),
	}
	m.keys = newTable(cfg.MaxKeys, maphash.String,
		func(l *slidingLog, now time.Time) bool { return l.idle(m.since(now), m.window) },
		func(l *slidingLog, _ time.Time) float64 { return float64(l.newest()) },
	)
	return m, nil
}

// Allow records one request for key if key made fewer than Limit requests
// in the last Window, and reports the outcome:
//
//   - Allowed: the request was accepted and recorded. A refused request is
//     not recorded, so retrying early does not push the wait further out.
//   - Remaining: requests key may still make right now, after this one
//     (0 when refused).
//   - Reset: how long until key may make one more request: 0 while
//     Remaining > 0, otherwise until the oldest request in the window
//     leaves it. Equal to RetryAfter when refused.
//   - RetryAfter: when refused, how long until a request will be allowed;
//     0 when allowed.
//   - Limit and Window: the policy, for the RateLimit-Policy header.
//
// Allow never fails and never blocks; ctx is unused.
func (m *Memory) Allow(_ context.Context, key string) (imagegen.LimitResult, error) {
	t := m.clock.Now()
	now := m.since(t)
	s := m.keys.shardFor(key)
	s.mu.Lock()
	l := s.get(key)
	if l == nil {
		l = &slidingLog{}
		// Clone so the map does not pin a larger buffer key may point into.
		s.insert(strings.Clone(key), l, t)
	}
	d := l.take(now, m.window, m.limit)
	s.mu.Unlock()

	res := imagegen.LimitResult{
		Allowed:   d.allowed,
		Limit:     m.limit,
		Window:    m.window,
		Remaining: d.remaining,
		Reset:     d.wait,
	}
	if !d.allowed {
		res.RetryAfter = d.wait
	}
	return res, nil
}

// Len reports how many keys are tracked, including idle keys that have
// not been swept out yet.
func (m *Memory) Len() int { return m.keys.len() }

// since converts a clock reading to an offset from the epoch.
func (m *Memory) since(t time.Time) time.Duration { return t.Sub(m.epoch) }
