package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// With many models holding pending tasks, a claim of a batch costs the
// models' heads (the loose scan, one probe each) plus the batch, not the
// batch times the models. Migration 20's merge found the next model by
// a pass over every model's head for each model it turned to, so with
// 2,000 models of one task each a claim of 64 took three times as long
// as a claim of one (both paying the same loose scan: 36 against 12 ms),
// where it should take little longer.
func TestClaimOfABatchAmongManyModelsCostsTheBatch(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	if _, err := pool.Exec(ctx, fmt.Sprintf(`
		INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag)
		SELECT 't' || i, 'o' || (i %% 50), '{}', 'm' || i, 1, 'pending', now() - interval '1 second', now(), now(), i
		FROM generate_series(1, 2000) i;
		ANALYZE %[1]s.tasks`, schema)); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// The time a claim of n takes, rolled back: the least of a few.
	claim := func(sql string, n int) time.Duration {
		best := time.Duration(1 << 62)
		for range 5 {
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got int
			start := time.Now()
			if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM `+sql, schema, n)).Scan(&got); err != nil {
				t.Fatal(err)
			}
			d := time.Since(start)
			_ = tx.Rollback(ctx)
			if got != n {
				t.Fatalf("claimed %d of %d", got, n)
			}
			best = min(best, d)
		}
		return best
	}
	for _, c := range []struct{ name, sql string }{
		{"claim_free", `%s.claim_free(now(), interval '1 minute', %d)`},
		{"claim_tasks", `%s.claim_tasks(now(), interval '1 minute', %d, 256, 100, '{}', '{}', '{}')`},
	} {
		one, batch := claim(c.sql, 1), claim(c.sql, 64)
		t.Logf("%s: one %v, 64 %v", c.name, one, batch)
		if batch > 2*one {
			t.Errorf("%s: a claim of 64 took %v, of one %v", c.name, batch, one)
		}
	}
}
