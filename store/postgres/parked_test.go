package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// capOfTwo is the owner cap of the parking tests: hog's two running
// tasks (r1, r2) hold it.
var capOfTwo = imagegen.Limits{OwnerConcurrency: 2}

// hogAtCap inserts, in schema (sanitized), hog's two running tasks and n
// pending ones of model m (h1 .. hn, tags 11 .. 10+n, oldest first).
func hogAtCap(t *testing.T, pool *pgxpool.Pool, schema string, n int) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), fmt.Sprintf(`
		INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag, lease_until)
		SELECT 'r' || i, 'hog', '{}', 'm', 1, 'processing', now(), now(), now(), i, now() + interval '1 hour'
		FROM generate_series(1, 2) i;
		INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag)
		SELECT 'h' || i, 'hog', '{}', 'm', 1, 'pending', now() - interval '1 second', now(), now(), 10 + i
		FROM generate_series(1, %[2]d) i`, schema, n)); err != nil {
		t.Fatal(err)
	}
}

// addPending inserts owner's pending task id of model m with tag.
func addPending(t *testing.T, pool *pgxpool.Pool, schema, id, owner string, tag int) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), fmt.Sprintf(`
		INSERT INTO %s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag)
		VALUES ($1, $2, '{}', 'm', 1, 'pending', now() - interval '1 second', now(), now(), $3)`, schema), id, owner, tag); err != nil {
		t.Fatal(err)
	}
}

// parkedOf counts owner's pending tasks, parked and in the model's queue.
func parkedOf(t *testing.T, pool *pgxpool.Pool, schema, owner string) (parked, queued int) {
	t.Helper()
	if err := pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT count(*) FILTER (WHERE parked),
		count(*) FILTER (WHERE NOT parked) FROM %s.tasks WHERE owner = $1 AND status = 'pending'`, schema), owner).
		Scan(&parked, &queued); err != nil {
		t.Fatal(err)
	}
	return parked, queued
}

// claimIDsWith claims up to n tasks under l and returns their ids in
// order (none: ErrNoTask).
func claimIDsWith(t *testing.T, s *postgres.Store, n int, l imagegen.Limits) []string {
	t.Helper()
	tasks, err := s.ClaimTasks(context.Background(), imagegen.ClaimParams{Lease: time.Minute, N: n, Limits: l})
	if err != nil && !errors.Is(err, imagegen.ErrNoTask) {
		t.Fatal(err)
	}
	var ids []string
	for _, task := range tasks {
		ids = append(ids, task.ID)
	}
	return ids
}

// claimNone claims up to n tasks under l and fails the test, saying
// what the claim was (what), when it took any.
func claimNone(t *testing.T, s *postgres.Store, n int, l imagegen.Limits, what string) {
	t.Helper()
	if got := claimIDsWith(t, s, n, l); len(got) != 0 {
		t.Fatalf("%s took %v", what, got)
	}
}

// freeSlot ends running task id's lease, which frees one of hog's slots.
func freeSlot(t *testing.T, pool *pgxpool.Pool, schema, id string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), fmt.Sprintf(`UPDATE %s.tasks SET lease_until = now() - interval '1 second'
		WHERE id = $1`, schema), id); err != nil {
		t.Fatal(err)
	}
}

// A claim parks at most 1024 tasks of a model's queue (migration 26):
// an owner's backlog behind its cap is parked over a few claims, each of
// bounded work, and once it is parked a claim reads none of it.
func TestClaimParksABacklogInBoundedSteps(t *testing.T) {
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	const backlog = 2500
	hogAtCap(t, pool, schema, backlog)
	for _, want := range []int{1024, 2048, backlog} {
		claimNone(t, s, 1, capOfTwo, "a claim with hog at its cap")
		if parked, queued := parkedOf(t, pool, schema, "hog"); parked != want || queued != backlog-want {
			t.Fatalf("%d parked and %d in the model's queue; want %d and %d", parked, queued, want, backlog-want)
		}
	}
}

// Once an owner's backlog is parked, a claim that finds the owner at its
// cap reads none of it, and locks none of it: it looks at the parked
// owner, not its tasks. Until migration 26 each such claim read every
// task of the backlog (inside its scan since migration 25, without
// locking it; before that, locking each).
func TestClaimReadsNoParkedTask(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	const backlog = 500
	hogAtCap(t, pool, schema, backlog)
	addPending(t, pool, schema, "b", "b", 100000)
	if got := claimIDsWith(t, s, 1, capOfTwo); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("claimed %v; want b (hog is at its cap)", got)
	}
	if parked, _ := parkedOf(t, pool, schema, "hog"); parked != backlog {
		t.Fatalf("%d of hog's tasks parked; want %d", parked, backlog)
	}
	// The park left the tasks' former entries in tasks_model_fair. A scan
	// marks them dead as it passes them once no transaction of the
	// database (another test's, say) may still see the rows they point
	// to; until then, and until a vacuum, each claim reads them again.
	// So the claim below is tried again (rolled back each time) until
	// they are gone, for at most 10 s.
	claimNone(t, s, 1, capOfTwo, "a claim with hog at its cap")
	addPending(t, pool, schema, "c", "c", 100001)
	var read int64
	for try := 0; ; try++ {
		var free int
		read, free = claimC(ctx, t, pool, s.Schema())
		if free != backlog {
			t.Fatalf("%d of hog's %d pending tasks unlocked while the claim's transaction is open; want all", free, backlog)
		}
		if read <= 50 || try == 100 {
			t.Logf("the claim read %d rows and index entries of tasks (try %d)", read, try+1)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if read > 50 {
		t.Errorf("the claim read %d rows and index entries of tasks, more than 50 (hog's parked backlog is %d)", read, backlog)
	}
}

// claimC runs, in a transaction it rolls back, a claim under an owner
// cap of 2 that must take task "c", and returns how many rows and index
// entries of tasks it read, and how many of hog's pending tasks another
// transaction could lock while it was open.
func claimC(ctx context.Context, t *testing.T, pool *pgxpool.Pool, schemaName string) (read int64, free int) {
	t.Helper()
	schema := pgx.Identifier{schemaName}.Sanitize()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// The counts are the backend's not yet reported (the transaction's,
	// and maybe its connection's last ones): the claim's is the difference.
	before := tasksRead(ctx, t, tx, schemaName)
	var claimed string
	if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT id FROM %s.claim_tasks(now(), interval '1 minute', 1, 256, 2,
		'{}', '{}', '{}')`, schema)).Scan(&claimed); err != nil {
		t.Fatal(err)
	}
	if claimed != "c" {
		t.Fatalf("claimed %s; want c", claimed)
	}
	read = tasksRead(ctx, t, tx, schemaName) - before
	if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM (SELECT 1 FROM %s.tasks
		WHERE owner = 'hog' AND status = 'pending' FOR UPDATE SKIP LOCKED) x`, schema)).Scan(&free); err != nil {
		t.Fatal(err)
	}
	return read, free
}

// A model whose pending tasks are all parked is still found by claims:
// when its owner's slot frees, its oldest parked task starts, then the
// others in order, those queued after it was parked (and parked in turn
// by the claims that met them) included. Positions count parked tasks
// where they are, and the owner's record goes once its parked queue is
// empty.
func TestAllParkedModelIsClaimedInOrder(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	hogAtCap(t, pool, schema, 5)
	claimNone(t, s, 4, capOfTwo, "a claim with hog at its cap")
	addPending(t, pool, schema, "n1", "hog", 1000) // queued after the park
	if parked, queued := parkedOf(t, pool, schema, "hog"); parked != 5 || queued != 1 {
		t.Fatalf("%d parked, %d queued; want 5 and 1", parked, queued)
	}
	claimNone(t, s, 4, capOfTwo, "a claim with hog at its cap")
	addPending(t, pool, schema, "n2", "hog", 1001)
	if parked, queued := parkedOf(t, pool, schema, "hog"); parked != 6 || queued != 1 {
		t.Fatalf("%d parked, %d queued; want 6 and 1 (n1 parked behind the others)", parked, queued)
	}
	order := []string{"h1", "h2", "h3", "h4", "h5", "n1", "n2"}
	positions, err := s.QueuePositions(ctx, order)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(positions, []int{0, 1, 2, 3, 4, 5, 6}) {
		t.Fatalf("positions %v; want 0 to 6", positions)
	}
	freeSlot(t, pool, schema, "r1")
	if got := claimIDsWith(t, s, 4, capOfTwo); !slices.Equal(got, []string{"h1"}) {
		t.Fatalf("with one slot free claimed %v; want h1", got)
	}
	freeSlot(t, pool, schema, "r2")
	if got := claimIDsWith(t, s, 4, capOfTwo); !slices.Equal(got, []string{"h2"}) {
		t.Fatalf("with one slot free claimed %v; want h2", got)
	}
	// A claim with no caps merges the parked queue too.
	if got := claimIDsWith(t, s, 10, imagegen.Limits{}); !slices.Equal(got, order[2:]) {
		t.Fatalf("a claim with no caps claimed %v; want %v", got, order[2:])
	}
	var records, parked int
	if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s.parked_owners),
		(SELECT count(*) FROM %[1]s.tasks WHERE parked)`, schema)).Scan(&records, &parked); err != nil {
		t.Fatal(err)
	}
	if records != 0 || parked != 0 {
		t.Fatalf("%d parked owners' records and %d parked tasks left; want none", records, parked)
	}
}

// Migrating down from version 26 puts the parked tasks back in their
// models' queues: version 25's claim takes them in order. Up again,
// claims park as before.
func TestDowngradeFrom26KeepsParkedTasks(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	hogAtCap(t, pool, schema, 4)
	claimNone(t, s, 4, capOfTwo, "a claim with hog at its cap")
	if parked, _ := parkedOf(t, pool, schema, "hog"); parked != 4 {
		t.Fatalf("%d parked; want 4", parked)
	}
	if err := postgres.MigrateTo(ctx, pool, s.Schema(), 25); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, fmt.Sprintf(`SELECT id FROM %s.claim_tasks(now(), interval '1 minute', 10, 256, 0,
		'{}', '{}', '{}')`, schema))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"h1", "h2", "h3", "h4"}) {
		t.Fatalf("version 25 claimed %v; want h1 to h4", ids)
	}
	if err := postgres.Migrate(ctx, pool, s.Schema()); err != nil {
		t.Fatal(err)
	}
	addPending(t, pool, schema, "h5", "hog", 100)
	claimNone(t, s, 4, capOfTwo, "a claim with hog at its cap")
	if parked, _ := parkedOf(t, pool, schema, "hog"); parked != 1 {
		t.Fatalf("%d parked after the upgrade; want 1", parked)
	}
}

// windowOwners is how many owners parkOwnersPastTheWindow parks: more
// than the 64 a claim looks at in a model.
const windowOwners = 70

// parkOwnersPastTheWindow makes a store whose model m has windowOwners
// owners o10 .. o79 parked at a cap of one, each with a running task
// (r<i>) and a parked one (p<i>, tag 100+i), all looked at at once, so
// that a claim looks at o10 .. o73 (by name) and not at o74 .. o79.
func parkOwnersPastTheWindow(t *testing.T) (*postgres.Store, *pgxpool.Pool, string) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	if _, err := pool.Exec(ctx, fmt.Sprintf(`
		INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag, lease_until)
		SELECT 'r' || i, 'o' || i, '{}', 'm', 1, 'processing', now(), now(), now(), i, now() + interval '1 hour'
		FROM generate_series(10, 9 + %[2]d) i;
		INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag)
		SELECT 'p' || i, 'o' || i, '{}', 'm', 1, 'pending', now() - interval '1 second', now(), now(), 100 + i
		FROM generate_series(10, 9 + %[2]d) i`, schema, windowOwners)); err != nil {
		t.Fatal(err)
	}
	claimNone(t, s, 1, capOfOne, "a claim with every owner at its cap")
	var records int
	if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s.parked_owners`, schema)).Scan(&records); err != nil {
		t.Fatal(err)
	}
	if records != windowOwners {
		t.Fatalf("%d parked owners; want %d", records, windowOwners)
	}
	return s, pool, schema
}

var capOfOne = imagegen.Limits{OwnerConcurrency: 1}

// A claim looks at 64 of a model's parked owners, the least recently
// looked at first: an owner beyond them whose slot frees is claimed a
// claim or so later, and a task queued by a parked owner it did not look
// at is parked behind the owner's others.
func TestParkedOwnersBeyondTheWindowTakeTheirTurn(t *testing.T) {
	s, pool, schema := parkOwnersPastTheWindow(t)
	last := fmt.Sprintf("o%d", 9+windowOwners) // after the first 64 by name, looked at as long ago
	addPending(t, pool, schema, "late", "o78", 1000)
	freeSlot(t, pool, schema, "r"+last[1:])
	var got []string
	claims := 0
	for len(got) == 0 && claims < 3 {
		got = claimIDsWith(t, s, 1, capOfOne)
		claims++
	}
	if !slices.Equal(got, []string{"p" + last[1:]}) {
		t.Fatalf("after %d claims claimed %v; want %s's task", claims, got, last)
	}
	t.Logf("%s's task claimed by claim %d", last, claims)
	if parked, queued := parkedOf(t, pool, schema, "o78"); parked != 2 || queued != 0 {
		t.Fatalf("o78 has %d parked and %d queued; want 2 and 0", parked, queued)
	}
}

// A parked task whose owner has no parked record is one no claim would
// find: a process of a version before 26 that requeues a task a claim
// had parked (cancelled while parked) writes 'pending' and leaves the
// flag. Sweep gives such a task back to its model's queue, and only
// such: a parked owner's tasks stay parked.
func TestSweepUnparksTasksWithoutTheirOwnersRecord(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	hogAtCap(t, pool, schema, 3)
	claimNone(t, s, 1, capOfTwo, "a claim with hog at its cap")
	// stray: pending and parked with no record of its owner, as an
	// earlier version's requeue leaves it.
	if _, err := pool.Exec(ctx, fmt.Sprintf(`
		INSERT INTO %s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag, parked)
		VALUES ('stray', 'other', '{}', 'm', 1, 'pending', now() - interval '1 second', now(), now(), 5, true)`, schema)); err != nil {
		t.Fatal(err)
	}
	claimNone(t, s, 1, capOfTwo, "a claim with the stray out of every queue a claim reads")
	swept, err := s.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if swept.Unparked != 1 {
		t.Fatalf("Sweep unparked %d tasks; want 1 (the stray)", swept.Unparked)
	}
	if parked, _ := parkedOf(t, pool, schema, "hog"); parked != 3 {
		t.Fatalf("%d of hog's tasks parked after Sweep; want 3 (hog is parked)", parked)
	}
	if got := claimIDsWith(t, s, 1, capOfTwo); !slices.Equal(got, []string{"stray"}) {
		t.Fatalf("after Sweep claimed %v; want the stray", got)
	}
}

// An owner below its cap whose parked record lies beyond the claim's
// window of 64 (not looked at by this claim) keeps its order: its new
// task, queued behind its parked ones, is parked too, not claimed ahead
// of them; the claim that looks at the owner takes its oldest task.
func TestOwnerBelowItsCapBeyondTheWindowKeepsItsOrder(t *testing.T) {
	s, pool, schema := parkOwnersPastTheWindow(t)
	freeSlot(t, pool, schema, "r78") // o78 is below its cap now
	addPending(t, pool, schema, "late", "o78", 1000)
	// This claim looks at o10 .. o73, each at its cap; o78, beyond the
	// window, may start but has p78 parked ahead of late.
	claimNone(t, s, 1, capOfOne, "a claim whose window leaves o78 out")
	if parked, queued := parkedOf(t, pool, schema, "o78"); parked != 2 || queued != 0 {
		t.Fatalf("o78 has %d parked and %d queued; want 2 and 0 (late parked behind p78)", parked, queued)
	}
	// The next claim looks at o74 .. o79 first: o78's oldest starts.
	if got := claimIDsWith(t, s, 1, capOfOne); !slices.Equal(got, []string{"p78"}) {
		t.Fatalf("the claim that looks at o78 took %v; want [p78]", got)
	}
	if parked, queued := parkedOf(t, pool, schema, "o78"); parked != 1 || queued != 0 {
		t.Fatalf("o78 has %d parked and %d queued; want late parked", parked, queued)
	}
}
