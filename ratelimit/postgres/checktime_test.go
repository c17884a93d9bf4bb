package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/ratelimit/postgres"
)

// A check on the server's clock counts at the time it is made, not when
// its batch began: a check on z that waits in its batch behind a check
// held up by another transaction (here for 1.2 s) is still counted when
// it runs. Counted at its batch's start, z's slot would leave the window
// 1.2 s early, and with a Limit of 1 a Window (2 s) z would be accepted
// again 1 s after it was.
func TestCheckCountsAtItsOwnTime(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.ConnectPool(t, 6)
	schema := pgtest.MigratedSchema(t, pool)
	const window, held = 2 * time.Second, 1200 * time.Millisecond
	lim := newPostgres(t, pool, postgres.Config{Limit: 1, Window: window, Schema: schema})
	// lock makes the row of key in a transaction left open: a check of
	// key waits for it until the returned func rolls it back.
	lock := func(key string) (release func()) {
		tx, err := pool.Begin(ctx)
		is.NoErr(err)
		_, err = tx.Exec(ctx, `INSERT INTO "`+schema+`".rate_limits (key, window_us, times) VALUES ($1, 1, '{0}')`, postgres.DefaultPrefix+key)
		is.NoErr(err)
		return func() { _ = tx.Rollback(ctx) }
	}
	errs := make(chan error, 3)
	allow := func(key string) { _, err := lim.Allow(ctx, key); errs <- err }

	// A first batch (blocker) waits, so that a and z queue together
	// behind it; once it is let go their batch runs, and waits at a.
	releaseBlocker := lock("blocker")
	go allow("blocker")
	time.Sleep(300 * time.Millisecond)
	accepted := make(chan time.Time, 1)
	go allow("a")
	go func() {
		r, err := lim.Allow(ctx, "z")
		errs <- err
		if err == nil && r.Allowed {
			accepted <- time.Now()
		}
		close(accepted)
	}()
	time.Sleep(300 * time.Millisecond)
	releaseA := lock("a")
	releaseBlocker()
	time.Sleep(held)
	releaseA()
	at, ok := <-accepted
	is.True(ok) // z's first check is accepted
	for range 3 {
		is.NoErr(<-errs)
	}

	time.Sleep(time.Until(at.Add(window - held + 200*time.Millisecond)))
	r, err := lim.Allow(ctx, "z")
	is.NoErr(err)
	is.True(!r.Allowed) // still in the window of the first: a Limit of 1
}
