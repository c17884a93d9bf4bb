package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
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
	t.Cleanup(lim.Close) // before the pool closes: cleanups run last first
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

// Rows of idle keys are deleted once their window has passed, in the
// background: no further Allow is needed.
func TestForgetsIdleKeys(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	schema := pgtest.MigratedSchema(t, pool)
	clock := imagegentest.NewClock(time.Time{})
	lim := newPostgres(t, pool, postgres.Config{Limit: 2, Window: time.Millisecond, Schema: schema, SweepInterval: 10 * time.Millisecond, Now: clock.Now})
	for _, k := range []string{"a", "b", "c"} {
		_, err := lim.Allow(ctx, k)
		is.NoErr(err)
	}
	rows := func() int {
		var n int
		is.NoErr(pool.QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".rate_limits`).Scan(&n))
		return n
	}
	is.Equal(rows(), 3) // not idle yet: the injected clock has not moved
	clock.Advance(time.Second)
	testenv.Eventually(t, 5*time.Second, "the idle keys' rows to be deleted", func() bool { return rows() == 0 })
}

// requestKey marks the context of a request in TestAllowDoesNotSweep.
type requestKey struct{}

// deletes counts the DELETE statements run on a context of a request.
type deletes struct{ onRequest atomic.Int64 }

func (d *deletes) TraceQueryStart(ctx context.Context, _ *pgx.Conn, q pgx.TraceQueryStartData) context.Context {
	if ctx.Value(requestKey{}) != nil && strings.HasPrefix(q.SQL, "DELETE") {
		d.onRequest.Add(1)
	}
	return ctx
}

func (d *deletes) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// The sweep of idle keys never runs inside Allow, on the request's time
// and context, even when idle rows wait to be deleted.
func TestAllowDoesNotSweep(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	schema := pgtest.MigratedSchema(t, pgtest.Connect(t))
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	is.NoErr(err)
	tracer := &deletes{}
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	is.NoErr(err)
	t.Cleanup(pool.Close)
	clock := imagegentest.NewClock(time.Time{})
	lim := newPostgres(t, pool, postgres.Config{Limit: 2, Window: time.Millisecond, Schema: schema, SweepInterval: time.Hour, Now: clock.Now})
	reqCtx := context.WithValue(ctx, requestKey{}, true)
	for i := range 20 {
		_, err := lim.Allow(reqCtx, fmt.Sprint("k", i))
		is.NoErr(err)
		clock.Advance(time.Second) // every earlier key is idle
	}
	is.Equal(tracer.onRequest.Load(), int64(0))
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
		is.NoErr(pool.QueryRow(ctx, `SELECT xmin::text, ctid::text FROM "`+schema+`".rate_limits WHERE key = $1`, postgres.DefaultPrefix+"full").Scan(&xmin, &ctid))
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

// Concurrent checks of one limiter go to the database in batches, a
// batch one transaction holding the rows it changed until it commits.
// Two limiters' batches over the same hot keys, each limiter's callers
// walking the keys in another order, take the rows in one order (the
// keys'), so neither waits for the other in a cycle (a deadlock, which
// PostgreSQL breaks by failing a batch), and every check is counted.
func TestBatchesOfTwoProcessesDoNotDeadlock(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.ConnectPool(t, 8)
	schema := pgtest.MigratedSchema(t, pool)
	const keys, goroutines, each = 8, 16, 120
	cfg := postgres.Config{Limit: 1 << 20, Window: time.Hour, Schema: schema}
	lims := []*postgres.Limiter{newPostgres(t, pool, cfg), newPostgres(t, pool, cfg)}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for g := range goroutines {
		lim := lims[g%2]
		wg.Go(func() {
			for j := range each {
				k := (g + j) % keys
				if g%2 == 1 {
					k = keys - 1 - k // the other limiter's callers walk the keys backwards
				}
				if _, err := lim.Allow(ctx, fmt.Sprint("hot-", k)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	is.NoErr(errors.Join(errs...))
	for k := range keys {
		var n int
		is.NoErr(pool.QueryRow(ctx, `SELECT cardinality(times) FROM "`+schema+`".rate_limits WHERE key = $1`, postgres.DefaultPrefix+fmt.Sprint("hot-", k)).Scan(&n))
		is.Equal(n, goroutines*each/keys) // every check of the key counted
	}
}

// A batch in flight can wait on a row another transaction holds (here
// for up to 3 s; at most the batch's 10 s). A check of another key that
// queues behind it and whose ctx ends meanwhile is never sent: it
// returns with ctx's error at once, not when that batch ends.
func TestQueuedCheckReturnsWhenItsContextEnds(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.ConnectPool(t, 4)
	schema := pgtest.MigratedSchema(t, pool)
	lim := newPostgres(t, pool, postgres.Config{Limit: 100, Window: time.Hour, Schema: schema})
	_, err := lim.Allow(ctx, "hot")
	is.NoErr(err)
	tx, err := pool.Begin(ctx)
	is.NoErr(err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `UPDATE "`+schema+`".rate_limits SET times = times || 1::bigint WHERE key = $1`, postgres.DefaultPrefix+"hot")
	is.NoErr(err)
	blocked := make(chan error, 1)
	go func() { _, err := lim.Allow(ctx, "hot"); blocked <- err }() // its batch waits for tx
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var waiting bool
		is.NoErr(pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position('"' || $1 || '".rate_allow' IN query) > 0)`, schema).Scan(&waiting))
		if waiting {
			break
		}
		is.True(time.Now().Before(deadline)) // the batch waits on the row
	}
	release := time.AfterFunc(3*time.Second, func() { _ = tx.Rollback(ctx) })
	defer release.Stop()
	c, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = lim.Allow(c, "other")
	took := time.Since(start)
	is.True(errors.Is(err, context.DeadlineExceeded))
	is.True(took < 2*time.Second) // not held until the batch in flight ended (3 s)
	_ = tx.Rollback(ctx)
	is.NoErr(<-blocked)
}
