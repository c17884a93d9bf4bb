package postgres

import "context"

// SweepOnceForTest runs one round of the sweep of idle keys, as the
// sweeper does every SweepInterval.
func (p *Limiter) SweepOnceForTest(ctx context.Context) { p.sweepOnce(ctx) }
