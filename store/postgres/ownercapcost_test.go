package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// A claim with an owner cap counts an owner's running tasks once it
// finds the owner at its cap, not again for each of the owner's tasks it
// passes over. Since migration 20 a claim may pass over ClaimScan tasks
// in each model's queue, and claim_tasks asked held_reason about each
// one, which counted the owner's running tasks each time, through
// tasks_owner (every task of the owner's, finished ones included): with
// an owner at its cap holding 250 tasks in each of five models, a claim
// read 750,000 index entries; with twenty models and 6,000 of the
// owner's tasks, 30 million, about a second of server CPU, at every
// worker's claim.
func TestOwnerAtCapIsCountedOncePerClaim(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	const models, backlog, running = 5, 250, 300
	if _, err := pool.Exec(ctx, fmt.Sprintf(`
		INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag)
		SELECT 'h' || i, 'hog', '{}', 'm' || (i %% %[2]d), 1, 'pending', now() - interval '1 second', now(), now(), i
		FROM generate_series(1, %[2]d * %[3]d) i;
		INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag)
		SELECT 'b' || i, 'b' || i, '{}', 'm' || i, 1, 'pending', now() - interval '1 second', now(), now(), 100000 + i
		FROM generate_series(0, %[2]d - 1) i;
		INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag, lease_until)
		SELECT 'r' || i, CASE WHEN i <= 2 THEN 'hog' ELSE 'w' || i END, '{}', 'x', 1, 'processing',
			now(), now(), now(), i, now() + interval '1 hour'
		FROM generate_series(1, %[4]d) i;
		ANALYZE %[1]s.tasks`, schema, models, backlog, running)); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var claimed int
	if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s.claim_tasks(now(), interval '1 minute', %d, 256, 2,
		'{}', '{}', '{}')`, schema, models+1)).Scan(&claimed); err != nil {
		t.Fatal(err)
	}
	read := tasksRead(ctx, t, tx, s.Schema()) // the transaction has read nothing else
	t.Logf("claimed %d, read %d rows of tasks", claimed, read)
	if claimed != models {
		t.Errorf("claimed %d tasks, want b's %d", claimed, models)
	}
	// Each held task read once or twice, the owner's tasks or the
	// running ones a few times: not once per held task (models * backlog
	// * hog's 1,252 tasks, 1.5 million).
	if limit := int64(4 * (models*backlog + running)); read > limit {
		t.Errorf("the claim read %d rows of tasks, more than %d", read, limit)
	}
}
