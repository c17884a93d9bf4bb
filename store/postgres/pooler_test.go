package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
	"github.com/imagegen/imagegen/store/storetest"
)

// TestConformanceThroughPgBouncer runs the store suite through PgBouncer
// in transaction mode (started by the test), the store's statements on
// the pooler and its LISTEN on a direct connection.
func TestConformanceThroughPgBouncer(t *testing.T) {
	p := pgtest.ConnectPooled(t)
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := imagegentest.NewClock(time.Time{})
		s := p.NewStore(t, postgres.Config{Clock: clock, Retention: retention})
		return storetest.Harness{Store: s, Advance: clock.Advance, Retention: retention}
	})
}

// Through the pooler, a finish in one store wakes a watcher on another
// and a submit wakes the other's idle workers, as on a direct
// connection: the notifications are sent through the pooler and heard on
// the direct listening connection.
func TestNotificationsThroughPgBouncer(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	p := pgtest.ConnectPooled(t)
	a := p.NewStore(t, postgres.Config{})
	b, err := postgres.New(p.Pool, postgres.Config{Schema: a.Schema(), ListenConfig: p.Listen})
	is.NoErr(err)
	defer b.Close()

	work := b.WorkReady()
	_, err = a.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 2, Ref: "g"})
	is.NoErr(err)
	finished, stop, err := b.WatchTask(ctx, "t1")
	is.NoErr(err)
	defer stop()
	other, stopOther, err := b.WatchTask(ctx, "nobody")
	is.NoErr(err)
	defer stopOther()
	received(work) // the listener's start may have signalled once
	_, err = a.CreateTask(ctx, newTask("t1", "u"), imagegen.CreateParams{})
	is.NoErr(err)
	select {
	case <-work:
	case <-time.After(time.Minute):
		t.Fatal("idle workers on the other store were not told of the submit")
	}
	is.True(finishAndWake(t, a, finished, other, "the watcher on the other store was not woken"))
}

// A listening connection named beside a pool that keeps named prepared
// statements (pgx's default) is refused: behind a transaction pooler
// those statements would vanish between transactions.
func TestListenConfigNeedsAPoolWithoutPreparedStatements(t *testing.T) {
	is := is.New(t)
	pool := pgtest.Connect(t) // pgx's default mode: named prepared statements
	_, err := postgres.New(pool, postgres.Config{ListenConfig: pool.Config().ConnConfig})
	is.True(errors.Is(err, postgres.ErrPreparedStatements))
}
