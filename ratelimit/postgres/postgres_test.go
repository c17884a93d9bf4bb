package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/ratelimit/limitertest"
	"github.com/imagegen/imagegen/ratelimit/postgres"
)

func newPostgres(t testing.TB, pool *pgxpool.Pool, cfg postgres.Config) *postgres.Limiter {
	t.Helper()
	lim, err := postgres.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// TestSuite runs the limiter suite on the PostgreSQL named by
// IMAGEGEN_TEST_POSTGRES with an injected clock (a real server's time
// cannot be moved), in one schema of its own.
func TestSuite(t *testing.T) {
	pool := pgtest.Connect(t)
	schema := pgtest.MigratedSchema(t, pool)
	limitertest.Run(t, func(t *testing.T, limit int, window time.Duration) limitertest.Harness {
		clock := imagegentest.NewClock(time.Time{})
		lim := newPostgres(t, pool, postgres.Config{Limit: limit, Window: window, Schema: schema, Now: clock.Now})
		return limitertest.Harness{Limiter: lim, Advance: clock.Advance}
	})
}

// Two limiters on one schema (two processes) share each key's count,
// on the server's clock.
func TestSharedAcrossProcesses(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	schema := pgtest.MigratedSchema(t, pool)
	cfg := postgres.Config{Limit: 10, Window: time.Minute, Schema: schema}
	a, b := newPostgres(t, pool, cfg), newPostgres(t, pool, cfg)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	var errs []error
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lim := a
			if i%2 == 1 {
				lim = b
			}
			res, err := lim.Allow(ctx, "alice")
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
			if res.Allowed {
				allowed++
			}
		}()
	}
	wg.Wait()
	is.NoErr(errors.Join(errs...))
	is.Equal(allowed, 10)
	// Another policy (prefix) on the same schema counts apart.
	other := newPostgres(t, pool, postgres.Config{Limit: 1, Window: time.Minute, Schema: schema, Prefix: "auth:"})
	res, err := other.Allow(ctx, "alice")
	is.NoErr(err)
	is.True(res.Allowed)
}

// Rows of idle keys are deleted once their window has passed.
func TestForgetsIdleKeys(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	schema := pgtest.MigratedSchema(t, pool)
	clock := imagegentest.NewClock(time.Time{})
	lim := newPostgres(t, pool, postgres.Config{Limit: 2, Window: time.Millisecond, Schema: schema, Now: clock.Now})
	for _, k := range []string{"a", "b", "c"} {
		_, err := lim.Allow(ctx, k)
		is.NoErr(err)
	}
	clock.Advance(time.Second)
	time.Sleep(2 * time.Millisecond) // the sweep runs at most once a Window of real time
	_, err := lim.Allow(ctx, "d")
	is.NoErr(err)
	var n int
	is.NoErr(pool.QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".rate_limits`).Scan(&n))
	is.True(n <= 1) // a, b and c are gone; d may stay
}

// A refusal writes nothing: the key's row keeps its version. (That an
// acceptance writes little shows in BenchmarkAllowHotKeys's WAL-B/op.)
func TestRefusalsWriteNothing(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	schema := pgtest.MigratedSchema(t, pool)
	version := func() (xmin, ctid string) {
		t.Helper()
		is.NoErr(pool.QueryRow(ctx, `SELECT xmin::text, ctid::text FROM "`+schema+`".rate_limits WHERE key = 'rl:full'`).Scan(&xmin, &ctid))
		return xmin, ctid
	}
	lim := newPostgres(t, pool, postgres.Config{Limit: 3, Window: time.Minute, Schema: schema})
	for range 3 {
		res, err := lim.Allow(ctx, "full")
		is.NoErr(err)
		is.True(res.Allowed)
	}
	xmin, ctid := version()
	for range 20 {
		res, err := lim.Allow(ctx, "full")
		is.NoErr(err)
		is.True(!res.Allowed)
	}
	x2, c2 := version()
	is.Equal(x2, xmin) // no new row version: the refusals wrote nothing
	is.Equal(c2, ctid)
}
