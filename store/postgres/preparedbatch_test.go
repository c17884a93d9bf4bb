package postgres_test

import (
	"context"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// preparingStoreOfOne is a store on a fresh schema whose pool, in pgx's
// default mode, has one connection, and its owner "u" 10 credits.
func preparingStoreOfOne(t *testing.T) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	pool := wrappedPoolMode(t, poolOfOneURL(t), pgx.QueryExecModeCacheStatement, func(c net.Conn) net.Conn { return c })
	s := modeStore(t, pool, pgtest.Connect(t))
	if _, err := s.AddEntry(context.Background(), imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	return s, pool
}

// On a pool in pgx's default mode, a batch of submits runs its two
// statements prepared, once a connection: the batch sent them unnamed,
// so the server parsed and planned both for every batch, about a fifth
// of a submit's CPU there (BenchmarkPostgresSubmitCPU in the bench
// module).
func TestBatchStatementsArePreparedOnceAConnection(t *testing.T) {
	ctx := context.Background()
	s, pool := preparingStoreOfOne(t)
	for _, id := range []string{"t1", "t2", "t3"} {
		if _, err := s.CreateTask(ctx, newTask(id, "u"), imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
	}
	// The pool's one connection is the one that ran the batches.
	var starts, submits, submitRuns int64
	err := pool.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE statement LIKE '%pg_advisory_xact_lock%'),
		count(*) FILTER (WHERE statement LIKE '%submit_tasks(%'),
		coalesce(sum(generic_plans + custom_plans) FILTER (WHERE statement LIKE '%submit_tasks(%'), 0)
		FROM pg_prepared_statements WHERE statement NOT LIKE '%pg_prepared_statements%'`).Scan(&starts, &submits, &submitRuns)
	if err != nil {
		t.Fatal(err)
	}
	if starts != 1 || submits != 1 || submitRuns != 3 {
		t.Fatalf("prepared on the connection: %d batch starts, %d submit statements run %d times; want 1, 1 run 3 times", starts, submits, submitRuns)
	}
}

// A batch whose prepared statements the server no longer has (a host
// app sharing the pool ran DISCARD ALL or DEALLOCATE ALL on the
// connection) prepares them again and runs: the server refused it
// before it ran anything. pgx's own statement cache forgets a statement
// that failed, but the batch's statements are its own, and every batch
// on that connection failed until the pool closed it.
func TestBatchPreparesAgainAfterItsStatementsAreGone(t *testing.T) {
	ctx := context.Background()
	s, pool := preparingStoreOfOne(t)
	if _, err := s.CreateTask(ctx, newTask("t1", "u"), imagegen.CreateParams{}); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Behind pgx's back, as another user of the connection would.
	err = conn.Conn().PgConn().Exec(ctx, "DEALLOCATE ALL").Close()
	conn.Release()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t2", "t3"} {
		if _, err := s.CreateTask(ctx, newTask(id, "u"), imagegen.CreateParams{}); err != nil {
			t.Fatalf("submit %s after DEALLOCATE ALL: %v; want the statements prepared again", id, err)
		}
	}
}
