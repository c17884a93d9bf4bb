package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/matryer/is"

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
		return storetest.Harness{Store: s, Advance: clock.Advance, Retention: retention, KeepsChargedIDs: true}
	})
}

// Through the pooler, a finish in one store wakes a watcher on another
// and a submit wakes the other's idle workers, as on a direct
// connection: the notifications are sent through the pooler and heard on
// the direct listening connection.
func TestNotificationsThroughPgBouncer(t *testing.T) {
	is := is.New(t)
	p := pgtest.ConnectPooled(t)
	a := p.NewStore(t, postgres.Config{})
	b, err := postgres.New(p.Pool, postgres.Config{Schema: a.Schema(), ListenConfig: p.Listen})
	is.NoErr(err)
	defer b.Close()

	crossStoreNotifications(t, a, b)
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

// Beside a listening connection, a pool in pgx's describe_exec mode is
// refused too: it prepares each statement as the unnamed prepared
// statement and executes it in a second round trip, which a transaction
// pooler may send to another server session ("unnamed prepared statement
// does not exist", 26000, seen through PgBouncer 1.18 with 40 callers).
// The modes that need no prepared statement across round trips are
// accepted.
func TestListenConfigRefusesDescribeExec(t *testing.T) {
	is := is.New(t)
	listen := pgtest.Connect(t).Config().ConnConfig
	for mode, refused := range map[pgx.QueryExecMode]bool{
		pgx.QueryExecModeCacheStatement: true,
		pgx.QueryExecModeDescribeExec:   true,
		pgx.QueryExecModeCacheDescribe:  false,
		pgx.QueryExecModeExec:           false,
		pgx.QueryExecModeSimpleProtocol: false,
	} {
		cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
		is.NoErr(err)
		cfg.ConnConfig.DefaultQueryExecMode = mode
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg) // connects on first use
		is.NoErr(err)
		s, err := postgres.New(pool, postgres.Config{ListenConfig: listen})
		if refused {
			is.True(errors.Is(err, postgres.ErrPreparedStatements)) // refused
		} else {
			is.NoErr(err)
			s.Close()
		}
		pool.Close()
	}
}
