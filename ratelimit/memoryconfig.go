package ratelimit

import (
	"cmp"
	"fmt"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/ratelimit/internal/rolling"
)

// MemoryConfig configures a Memory limiter. Every field has a default.
type MemoryConfig struct {
	// Limit is how many requests a key may make in any rolling Window
	// (default 10).
	Limit int
	// Window is the length of the rolling window (default 1m).
	Window time.Duration
	// Clock tells the time (default imagegen.SystemClock).
	Clock imagegen.Clock
	// MaxKeys caps how many keys are tracked at once (default 1<<20).
	// Keys idle for a whole Window are dropped long before that; the cap
	// only matters when more keys than that are active within one Window,
	// and then the least recently used of a few sampled keys is forgotten
	// (so that key may get up to Limit more requests): the limiter fails
	// open for that key rather than refusing new keys or growing without
	// bound.
	MaxKeys int
}

// DefaultMaxKeys is MemoryConfig.MaxKeys when it is left zero.
const DefaultMaxKeys = 1 << 20

func (c MemoryConfig) withDefaults() MemoryConfig {
	if c.Clock == nil {
		c.Clock = imagegen.SystemClock{}
	}
	c.Limit = cmp.Or(c.Limit, rolling.DefaultLimit)
	c.Window = cmp.Or(c.Window, rolling.DefaultWindow)
	c.MaxKeys = cmp.Or(c.MaxKeys, DefaultMaxKeys)
	return c
}

func (c MemoryConfig) validate() error {
	if err := rolling.Check("ratelimit", "MemoryConfig", c.Limit, c.Window); err != nil {
		return err
	}
	if c.MaxKeys < 0 {
		return fmt.Errorf("ratelimit: MemoryConfig.MaxKeys must not be negative (got %d)", c.MaxKeys)
	}
	return nil
}
