package ratelimit

import (
	"cmp"
	"fmt"

	"github.com/imagegen/imagegen"
	"golang.org/x/time/rate"
)

// IPLimiterConfig configures an IPLimiter. Every field has a default.
type IPLimiterConfig struct {
	// Rate is how fast a client's allowance of failed authentications
	// refills, in failures per second (default 1).
	Rate rate.Limit
	// Burst is how many failures a client may make in a row before it is
	// blocked (default 10).
	Burst int
	// Clock tells the time (default imagegen.SystemClock).
	Clock imagegen.Clock
	// MaxClients caps how many clients (IPv4 addresses or IPv6 /64s) are
	// tracked at once (default 1<<16). Clients whose allowance has refilled
	// are dropped long before that; at the cap the client with the most
	// allowance among a few sampled is forgotten.
	MaxClients int
}

// DefaultMaxClients is IPLimiterConfig.MaxClients when it is left zero.
const DefaultMaxClients = 1 << 16

func (c IPLimiterConfig) withDefaults() IPLimiterConfig {
	if c.Clock == nil {
		c.Clock = imagegen.SystemClock{}
	}
	c.Rate = cmp.Or(c.Rate, 1)
	c.Burst = cmp.Or(c.Burst, 10)
	c.MaxClients = cmp.Or(c.MaxClients, DefaultMaxClients)
	return c
}

func (c IPLimiterConfig) validate() error {
	switch {
	case c.Rate < 0 || c.Rate != c.Rate: // negative or NaN
		return fmt.Errorf("ratelimit: IPLimiterConfig.Rate must be positive (got %v)", c.Rate)
	case c.Rate == rate.Inf:
		return fmt.Errorf("ratelimit: IPLimiterConfig.Rate must be finite (got %v)", c.Rate)
	case c.Burst < 0:
		return fmt.Errorf("ratelimit: IPLimiterConfig.Burst must not be negative (got %d)", c.Burst)
	case c.MaxClients < 0:
		return fmt.Errorf("ratelimit: IPLimiterConfig.MaxClients must not be negative (got %d)", c.MaxClients)
	}
	return nil
}
