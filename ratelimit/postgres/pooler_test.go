package postgres_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/ratelimit/limitertest"
	"github.com/imagegen/imagegen/ratelimit/postgres"
	storepg "github.com/imagegen/imagegen/store/postgres"
)

// TestSuiteThroughPgBouncer runs the limiter suite through PgBouncer in
// transaction mode (started by the test), on a pool made with
// store/postgres.PoolerConfig, as `imagegen serve -postgres-listen` makes
// it.
func TestSuiteThroughPgBouncer(t *testing.T) {
	p := pgtest.ConnectPooled(t)
	schema := pgtest.MigratedSchema(t, p.Direct)
	limitertest.Run(t, func(t *testing.T, limit int, window time.Duration) limitertest.Harness {
		clock := imagegentest.NewClock(time.Time{})
		lim := newPostgres(t, p.Pool, postgres.Config{Limit: limit, Window: window, Schema: schema, Now: clock.Now})
		return limitertest.Harness{Limiter: lim, Advance: clock.Advance}
	})
}

// Two processes (two pools through PgBouncer, each with its limiter), 64
// goroutines each, one key, on the server's clock: exactly Limit requests
// are accepted, and no call fails.
func TestOneKeyTwoProcessesThroughPgBouncer(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	p := pgtest.ConnectPooled(t)
	schema := pgtest.MigratedSchema(t, p.Direct)
	cfg, err := pgxpool.ParseConfig(p.Bouncer.URL)
	is.NoErr(err)
	storepg.PoolerConfig(cfg)
	cfg.MaxConns = 16
	other, err := pgxpool.NewWithConfig(ctx, cfg)
	is.NoErr(err)
	t.Cleanup(other.Close)
	const limit = 25
	lc := postgres.Config{Limit: limit, Window: time.Hour, Schema: schema}
	lims := []*postgres.Limiter{newPostgres(t, p.Pool, lc), newPostgres(t, other, lc)}
	var allowed atomic.Int64
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for i := range 128 {
		wg.Go(func() {
			for range 4 {
				res, err := lims[i%2].Allow(ctx, "one")
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				if res.Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	is.NoErr(errors.Join(errs...))
	is.Equal(allowed.Load(), int64(limit))
}

// PgBouncer restarted under a pool of several idle connections: the
// first check on a stale connection fails and empties the pool, and the
// next checks run on new connections (without the reset, each stale
// connection failed one check in turn).
func TestAllowThroughPgBouncerRestart(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	p := pgtest.ConnectPooled(t)
	schema := pgtest.MigratedSchema(t, p.Direct)
	lim := newPostgres(t, p.Pool, postgres.Config{Limit: 1000, Window: time.Hour, Schema: schema})
	pgtest.FillIdle(t, p.Pool, 4) // several connections in the pool, all of them cut by the restart

	p.Bouncer.Restart()

	failed := 0
	for range 20 {
		if _, err := lim.Allow(ctx, "k"); err != nil {
			t.Logf("allow: %v", err)
			failed++
		}
	}
	is.True(failed <= 1) // the first stale connection's check; then the pool is new
}
