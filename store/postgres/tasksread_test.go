package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// tasksRead is how many rows and index entries of schema's tasks table
// tx has read so far, as its transaction's statistics count them (they
// reach the server's views only between transactions): what a claim
// read, taken before and after it, in counts the machine's load does
// not move.
func tasksRead(ctx context.Context, t *testing.T, tx pgx.Tx, schema string) int64 {
	t.Helper()
	var n int64
	if err := tx.QueryRow(ctx, `SELECT sum(pg_stat_get_xact_tuples_fetched(c) + pg_stat_get_xact_tuples_returned(c))
		FROM (SELECT $1::regclass::oid c UNION ALL SELECT indexrelid FROM pg_index WHERE indrelid = $1::regclass) x`,
		schema+".tasks").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
