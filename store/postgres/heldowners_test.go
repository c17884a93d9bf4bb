package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// A claim that finds an owner at its cap passes over the owner's other
// pending tasks inside its scan (migration 25), without locking them:
// until then its cursor locked every one of them (a WAL record each)
// and handed it to the claim's loop to be passed over there, which with
// every owner of a model at its cap was every pending task of the model
// at every claim. Here the owner's 500 tasks lie ahead of another
// owner's one; the claim takes that one, and while its transaction is
// open another finds all but the first of the owner's tasks unlocked.
func TestClaimLocksNoTaskOfAnOwnerAtItsCap(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	const backlog = 500
	if _, err := pool.Exec(ctx, fmt.Sprintf(`
		INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag, lease_until)
		SELECT 'r' || i, 'hog', '{}', 'm', 1, 'processing', now(), now(), now(), i, now() + interval '1 hour'
		FROM generate_series(1, 2) i;
		INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag)
		SELECT 'h' || i, 'hog', '{}', 'm', 1, 'pending', now() - interval '1 second', now(), now(), 10 + i
		FROM generate_series(1, %[2]d) i;
		INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag)
		VALUES ('b', 'b', '{}', 'm', 1, 'pending', now() - interval '1 second', now(), now(), 100000)`, schema, backlog)); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var claimed string
	if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT id FROM %s.claim_tasks(now(), interval '1 minute', 1, 256, 2,
		'{}', '{}', '{}')`, schema)).Scan(&claimed); err != nil {
		t.Fatal(err)
	}
	if claimed != "b" {
		t.Fatalf("claimed %s; want b (hog is at its cap of 2)", claimed)
	}
	var free int
	if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM (SELECT 1 FROM %s.tasks
		WHERE owner = 'hog' AND status = 'pending' FOR UPDATE SKIP LOCKED) x`, schema)).Scan(&free); err != nil {
		t.Fatal(err)
	}
	if free != backlog-1 {
		t.Fatalf("%d of hog's %d pending tasks unlocked while the claim's transaction is open; want %d (the first, found at the cap, is locked)", free, backlog, backlog-1)
	}
}
