package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// A claim with an owner cap counts the owner's running tasks, not every
// task the owner ever had. The count (held_reason) went through
// tasks_owner, which holds all of an owner's tasks, the finished ones
// kept for the retention included, whenever the statistics made that
// index look cheap: the table analyzed while many owners' tasks ran (or
// not analyzed since it grew). An owner with 100,000 finished tasks then
// cost a claim 100,000 index entries for each of its tasks taken.
func TestOwnerCapCountIgnoresFinishedTasks(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	measure := func(finished int) (claimed, read int64) {
		s := pgtest.NewStore(t, pool, postgres.Config{})
		schema := pgx.Identifier{s.Schema()}.Sanitize()
		if _, err := pool.Exec(ctx, fmt.Sprintf(`
			ALTER TABLE %[1]s.tasks SET (autovacuum_enabled = false);
			INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag, lease_until)
			SELECT 'x' || i, 'x' || i, '{}', 'm', 1, 'processing', now(), now(), now(), i, now() + interval '1 hour'
			FROM generate_series(1, 2000) i;
			ANALYZE %[1]s.tasks;
			UPDATE %[1]s.tasks SET status = 'success', lease_until = NULL, finished_at = now(),
				expires_at = now() + interval '7 days';
			INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag,
				finished_at, expires_at)
			SELECT 'f' || i, 'big', '{}', 'm', 1, 'success', now(), now(), now(), i, now(), now() + interval '7 days'
			FROM generate_series(1, %[2]d) i;
			INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag)
			SELECT 'p' || i, 'big', '{}', 'm', 1, 'pending', now() - interval '1 second', now(), now(), 1000000 + i
			FROM generate_series(1, 6) i;
			INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag, lease_until)
			SELECT 'r' || i, CASE WHEN i = 1 THEN 'big' ELSE 'w' || i END, '{}', 'm', 1, 'processing',
				now(), now(), now(), i, now() + interval '1 hour'
			FROM generate_series(1, 10) i`, schema, finished)); err != nil {
			t.Fatal(err)
		}
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		before := tasksRead(ctx, t, tx, s.Schema())
		if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s.claim_tasks(now(), interval '1 minute', 8, 256, 4,
			'{}', '{}', '{}')`, schema)).Scan(&claimed); err != nil {
			t.Fatal(err)
		}
		return claimed, tasksRead(ctx, t, tx, s.Schema()) - before
	}
	claimed0, read0 := measure(0)
	claimed, read := measure(20000)
	t.Logf("the owner with no finished tasks: claimed %d, read %d; with 20,000: claimed %d, read %d",
		claimed0, read0, claimed, read)
	// big runs one task and may run four: three of its pending tasks are
	// taken, whatever its history.
	if claimed0 != 3 || claimed != 3 {
		t.Errorf("claimed %d and %d tasks, want 3 each", claimed0, claimed)
	}
	if read > read0+50 {
		t.Errorf("with 20,000 finished tasks the claim read %d rows and index entries of tasks, %d more than with none",
			read, read-read0)
	}
}
