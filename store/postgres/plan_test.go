package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// genericPlan is PostgreSQL's plan of statement for any parameter
// values (the plan a prepared statement keeps after its first
// executions), with args as the literal values to EXPLAIN it with.
func genericPlan(t *testing.T, statement, types, args string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("PREPARE s(%s) AS %s", types, statement)); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, fmt.Sprintf("EXPLAIN EXECUTE s(%s)", args), pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// A success finds its tasks by id (the primary key), not among the
// processing tasks (tasks_leases). The planner, told by stale or absent
// statistics that few tasks are processing, read every entry of
// tasks_leases and joined them with the batch; bitmap scans never mark
// the entries of finished tasks dead, so each success read the entries
// of every task that had run since the last vacuum (1,264 of them, 83
// heap pages, for a batch of 8 in the bench pipeline).
func TestCompleteFindsTasksByID(t *testing.T) {
	ctx := context.Background()
	s := pgtest.NewStore(t, pgtest.Connect(t), postgres.Config{})
	createTasks(t, s, 2000)
	for range 20 {
		if _, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 50}); err != nil {
			t.Fatal(err)
		}
	}
	plan := genericPlan(t, s.SQLForTest(postgres.CompleteSQL),
		"timestamptz, text[], integer[], bigint, text[], text[], text[], bigint[], text[], text, text, bigint[], bytea[]",
		"NULL, '{t0000}', '{1}', 1, '{}', '{}', '{}', '{}', '{}', 'on', 'x', '{NULL}', '{}'")
	if strings.Contains(plan, "tasks_leases") || !strings.Contains(plan, "tasks_pkey") {
		t.Errorf("the success does not find its tasks by id:\n%s", plan)
	}
}

// A claim walks the fair queue in order and stops after the tasks it
// takes, on a table PostgreSQL has no statistics of, where a LIMIT
// query's plan read and sorted every pending task (migration 14). The
// plan is read with auto_explain, which logs the plans of the
// statements inside claim_free; the test skips when the server has no
// auto_explain.
func TestClaimWalksTheQueueInOrder(t *testing.T) {
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	createTasks(t, s, 2000)
	var n int
	plans := nestedPlans(t, fmt.Sprintf("SELECT count(*) FROM %s.claim_free(now(), interval '1 minute', 8)",
		pgx.Identifier{s.Schema()}.Sanitize()), &n)
	if n != 8 {
		t.Fatalf("claimed %d tasks, want 8", n)
	}
	checkWalk(t, plans, "ORDER BY p.tag, p.seq")
	checkWalk(t, plans, "ORDER BY p.model") // the loose scan of the models' queues
	checkPlan(t, plans, "SET status = 'processing'", "Tid Scan on tasks")
}

// The claim's UPDATE takes the rows its walk locked by their ctid
// (migration 17), whatever the statistics: on a young table, a condition
// on status beside it was planned as a read of a whole pending-only index
// for every claim (tasks_owner_pending: 3,000 pending tasks made a claim
// of 16 twice as costly as before). Paused models (a walk of its own)
// change nothing there.
func TestClaimUpdatesTheRowsItLocked(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	createTasks(t, s, 3000)
	for _, paused := range []bool{false, true} {
		if paused {
			if _, err := pool.Exec(ctx, s.SQLForTest(`INSERT INTO {schema}.models (model, paused_until)
				VALUES ('other', now() + interval '1 hour')`)); err != nil {
				t.Fatal(err)
			}
		}
		var n int
		plans := nestedPlans(t, fmt.Sprintf("SELECT count(*) FROM %s.claim_free(now(), interval '1 minute', 16)",
			pgx.Identifier{s.Schema()}.Sanitize()), &n)
		if n != 16 {
			t.Fatalf("paused %v: claimed %d tasks, want 16", paused, n)
		}
		checkWalk(t, plans, "ORDER BY p.tag, p.seq")
		checkPlan(t, plans, "SET status = 'processing'", "Tid Scan on tasks")
	}
}

// vtime, once per batch of submits, reads the ready head of the fair
// queue in order too (migration 15): its LIMIT 1 query was planned, on a
// table without statistics, as a read and a sort of every ready pending
// task (two thirds of the server's CPU of a submit, bench module).
func TestVtimeWalksTheQueueInOrder(t *testing.T) {
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	createTasks(t, s, 2000)
	var v int64
	plans := nestedPlans(t, fmt.Sprintf("SELECT %s.vtime(now())", pgx.Identifier{s.Schema()}.Sanitize()), &v)
	if v != 0 { // the first task's tag (one turn of weight 1), less a turn
		t.Fatalf("vtime = %d, want 0", v)
	}
	checkWalk(t, plans, "ORDER BY")
}

// vtime reads each head it needs (each model's queue's, the first parked
// task's, the first delayed retry's) with a walk of its index in order,
// in the plans a session keeps too (migration 29): PL/pgSQL plans a
// statement without parameters once, at its first call, and the next
// model's head generically from its sixth call on. On a table of 233
// tasks without statistics, version 27's LIMIT 1 queries of the models'
// heads were planned as a scan of tasks_owner_pending and a sort, which
// every later call in the session ran on the grown queue.
func TestVtimeReadsTheHeadsInOrder(t *testing.T) {
	_, s := youngStore(t)
	var v int64
	plans := nestedPlans(t, fmt.Sprintf("SELECT min(%s.vtime(now() + i * interval '1 microsecond')) FROM generate_series(1, 8) i",
		pgx.Identifier{s.Schema()}.Sanitize()), &v)
	if v != 0 { // the first task's tag (one turn of weight 1), less a turn
		t.Fatalf("vtime = %d, want 0", v)
	}
	for _, order := range []string{
		"NOT p.delayed ORDER BY p.model", // the first model's head
		"AND p.model > ",                 // the next model's
		"AND p.parked ORDER BY",          // the first parked task
		"AND p.delayed ORDER BY",         // the first delayed retry
	} {
		checkWalk(t, plans, order)
	}
}

// model_base, once per model a batch of submits creates tasks of and
// once per task given back to the queue (migration 28), reads the head
// of the model's queue with one probe of tasks_model_fair, not a read
// and a sort of the model's pending tasks, in its generic plan too (a
// session keeps it from the sixth call on): on a table of 233 tasks
// without statistics, the same query with LIMIT 1 was planned
// generically as a scan of tasks_owner_pending and a sort, which every
// later call in the session then ran on the grown queue.
func TestModelBaseReadsTheModelsHead(t *testing.T) {
	_, s := youngStore(t)
	var base int64
	plans := nestedPlans(t, fmt.Sprintf("SELECT min(%s.model_base('m', 1000000000 + i)) FROM generate_series(1, 8) i",
		pgx.Identifier{s.Schema()}.Sanitize()), &base)
	if base != 999 { // the first task's tag (one turn of weight 1), less one
		t.Fatalf("model_base = %d, want 999", base)
	}
	checkWalk(t, plans, "ORDER BY p.tag, p.seq")
}

// model_heads, at the start of every claim, reads the head of each
// model's queue with a walk of tasks_model_fair in order (the loose
// scan), in the plans a session keeps too (migration 30): PL/pgSQL plans
// the first model's head once, at its first call, and the next model's
// generically from its sixth call on (at once inside claim_free, which
// forces generic plans). On a table of 233 tasks without statistics,
// version 27's LIMIT 1 queries were planned, from the first call, as a
// scan of tasks_owner_pending and a sort, which every later claim in
// the session ran on the grown queue.
func TestModelHeadsReadsTheHeadsInOrder(t *testing.T) {
	_, s := youngStore(t)
	var n int
	plans := nestedPlans(t, fmt.Sprintf(`SELECT count(*) FROM generate_series(1, 8) i,
		LATERAL %s.model_heads(now() + i * interval '1 microsecond') h WHERE h.models = '{m}'`,
		pgx.Identifier{s.Schema()}.Sanitize()), &n)
	if n != 8 {
		t.Fatalf("model_heads found model m alone %d times of 8", n)
	}
	checkWalk(t, plans, "NOT p.delayed ORDER BY p.model") // the first model's head
	checkWalk(t, plans, "AND p.model > ")                 // the next model's
}

// undelay, at the start of every claim, finds the models with delayed
// retries and each one's first due with a walk of tasks_delayed in
// order (its loose scan), in the plans a session keeps too: at 233
// tasks without statistics version 27's LIMIT 1 queries are planned on
// tasks_delayed, by their first call and generically alike, so they
// need no cursor. (Its UPDATE, which gives a model's due retries back by
// ctid, is not checked here.)
func TestUndelayReadsTheHeadsInOrder(t *testing.T) {
	ctx := context.Background()
	pool, s := youngStore(t)
	// 33 delayed retries of two models, due an hour apart: each call
	// below finds both models and gives some back.
	if _, err := pool.Exec(ctx, s.SQLForTest(`UPDATE {schema}.tasks
		SET model = CASE WHEN seq % 2 = 0 THEN 'm' ELSE 'n' END, delayed = true, run_after = now() + (seq % 16) * interval '1 hour'
		WHERE seq % 7 = 0`)); err != nil {
		t.Fatal(err)
	}
	var n int
	plans := nestedPlans(t, fmt.Sprintf("SELECT count(%s.undelay(now() + i * interval '1 hour')) FROM generate_series(1, 8) i",
		pgx.Identifier{s.Schema()}.Sanitize()), &n)
	if n != 8 {
		t.Fatalf("undelay ran %d times, want 8", n)
	}
	checkWalk(t, plans, "AND p.delayed ORDER BY p.model, p.run_after LIMIT 1")       // the first model's
	checkWalk(t, plans, "AND p.model > v_model ORDER BY p.model, p.run_after LIMIT") // the next model's
}

// nestedPlans runs query, scanning its one row into dest, and returns the
// plans auto_explain logs for it and the statements inside the functions
// it calls; it skips the test when the server has no auto_explain.
func nestedPlans(t *testing.T, query string, dest ...any) []string {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var plans []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		plans = append(plans, n.Message)
		mu.Unlock()
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "LOAD 'auto_explain'"); err != nil {
		t.Skipf("no auto_explain: %v", err)
	}
	if _, err := conn.Exec(ctx, `SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;
		SET auto_explain.log_level = notice`); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, query).Scan(dest...); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return plans
}

// checkWalk fails the test unless the plan of the statement containing
// order among plans is a scan of tasks_model_fair (the models' queues,
// migration 20) in order, without a sort; a statement that reads parked
// tasks (migration 26), of tasks_parked (an owner's parked queue) or
// tasks_parked_fair (every parked task); one that reads delayed retries
// (migration 27), of tasks_delayed (by model and when due) or
// tasks_delayed_fair (every delayed retry).
func checkWalk(t *testing.T, plans []string, order string) {
	t.Helper()
	found := false
	for _, p := range plans {
		if !strings.Contains(p, order) {
			continue
		}
		found = true
		index := "tasks_model_fair" // a model's queue (of the tasks neither parked nor delayed)
		switch {
		case strings.Contains(p, "AND p.delayed ORDER BY p.model"), strings.Contains(p, "AND p.delayed AND p.model"):
			index = "tasks_delayed" // the delayed retries by model, due first
		case strings.Contains(p, "AND p.delayed ORDER BY p.tag"): // every delayed retry
			index = "tasks_delayed_fair"
		case strings.Contains(p, "AND p.parked AND"): // an owner's parked queue
			index = "tasks_parked"
		case strings.Contains(p, "AND p.parked ORDER BY"): // every parked task
			index = "tasks_parked_fair"
		}
		if !strings.Contains(p, "Scan using "+index+" ") || strings.Contains(p, "Sort") || strings.Contains(p, "Seq Scan on tasks") {
			t.Errorf("the fair queue is not walked in order:\n%s", p)
		}
	}
	if !found {
		t.Fatalf("no plan of the queue scan among %d logged", len(plans))
	}
}

// checkPlan fails the test unless the plan of the statement containing
// text among plans has node in it.
func checkPlan(t *testing.T, plans []string, text, node string) {
	t.Helper()
	found := false
	for _, p := range plans {
		if !strings.Contains(p, text) {
			continue
		}
		found = true
		if !strings.Contains(p, node) {
			t.Errorf("no %s in the plan:\n%s", node, p)
		}
	}
	if !found {
		t.Fatalf("no plan of %q among %d logged", text, len(plans))
	}
}

// youngTasks is the size of a young tasks table, one without statistics
// yet, at which PostgreSQL's plans for a queue's head (LIMIT 1 over
// tasks_model_fair, which has just grown a second level) and for the
// claims' UPDATEs by ctid tip over to a scan and a sort, or a Seq Scan:
// the plans a session made there are kept as the table grows, so the
// tests of the plans a session keeps run at this size.
const youngTasks = 233

// youngStore returns a pool and a store whose tasks table is young:
// youngTasks pending tasks and no statistics.
func youngStore(t *testing.T) (*pgxpool.Pool, *postgres.Store) {
	t.Helper()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	createTasks(t, s, youngTasks)
	return pool, s
}

// createTasks submits n tasks of one owner, t0000 on, 16 at a time.
func createTasks(t *testing.T, s *postgres.Store, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "o", Kind: imagegen.LedgerGrant, Amount: int64(n), Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 16 {
				if _, err := s.CreateTask(ctx, newTask(fmt.Sprintf("t%04d", i), "o"), imagegen.CreateParams{}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Successes keep the generic plan of their prepared statement: a run of
// one-task successes on one connection plans the statement for its
// parameters' values not once. Before genericPlanSQL the plan cache
// planned the first five afresh and then chose by their costs (here the
// generic plan; in a session of 3000 tasks and one-task successes, the
// custom one, at every success: 0.86 against 0.43 ms of the backend's
// CPU a success).
func TestSuccessKeepsTheGenericPlan(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // the store's statements and the check share one session
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	createTasks(t, s, 10)
	tasks, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 10})
	if err != nil || len(tasks) != 10 {
		t.Fatalf("claimed %d tasks: %v", len(tasks), err)
	}
	for i, task := range tasks {
		img := imagegen.Image{ID: fmt.Sprintf("img%d", i), TaskID: task.ID, Owner: task.Owner, ContentType: "image/png", Size: 1}
		if _, err := s.CompleteTaskWithBytes(ctx, task.ID, task.Attempt, []imagegen.Image{img}, [][]byte{{1}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var generic, custom int64
	if err := pool.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements
		WHERE statement LIKE '%done AS (%' AND statement NOT LIKE '%pg_prepared_statements%'`).Scan(&generic, &custom); err != nil {
		t.Fatal(err)
	}
	if custom > 0 || generic != 10 {
		t.Errorf("the success statement was planned for its parameters %d times, generically %d times; want 0 and 10", custom, generic)
	}
}

// The claims write the rows they locked by ctid, WHERE ctid = ANY (an
// array of them), with a Tid Scan in the plans a session keeps too
// (migration 31): claim_free's UPDATE of the tasks it takes, the tasks
// both claims set aside (delayed) and claim_tasks parks, and undelay's
// due retries given back. PostgreSQL plans ctid = ANY of an array it
// does not know as ten rows; on a table of 233 tasks without statistics
// version 27's statements were planned as a Seq Scan of tasks, claim_free's
// generically from the first call (it forces generic plans) and
// undelay's from the sixth, which every later claim in the session ran
// on the grown table, finished tasks included.
func TestClaimsUpdateByCtidWithTidScans(t *testing.T) {
	for _, claim := range []string{
		"claim_free(now() + i * interval '1 hour', interval '1 minute', 8)",
		"claim_tasks(now() + i * interval '1 hour', interval '1 minute', 8, 256, 1, '{}', '{}', '{}')",
	} {
		name := claim[:strings.Index(claim, "(")]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			pool, s := youngStore(t)
			// Tasks not ready in the queue, which the claims set aside, and
			// delayed retries due an hour apart, which undelay gives back;
			// for claim_tasks, three owners at a cap of 1, whose tasks it parks.
			setup := `UPDATE {schema}.tasks SET run_after = now() + (seq % 16) * interval '1 hour' WHERE seq % 5 = 0;
				UPDATE {schema}.tasks SET delayed = true, run_after = now() + (seq % 16) * interval '1 hour' WHERE seq % 7 = 0`
			if name == "claim_tasks" {
				setup += `; UPDATE {schema}.tasks SET owner = 'o' || (seq % 3)`
			}
			if _, err := pool.Exec(ctx, s.SQLForTest(setup)); err != nil {
				t.Fatal(err)
			}
			var n int
			plans := nestedPlans(t, fmt.Sprintf("SELECT count(*) FROM generate_series(1, 8) i, LATERAL %s.%s c",
				pgx.Identifier{s.Schema()}.Sanitize(), claim), &n)
			if n == 0 {
				t.Fatal("claimed no task")
			}
			found := map[string]bool{}
			for _, p := range plans {
				if !strings.Contains(p, "ctid = ANY") || !strings.Contains(p, "UPDATE") || strings.Contains(p, "parked_owners SET") {
					continue
				}
				for _, set := range []string{"SET delayed = ", "SET parked = ", "SET status = 'processing'"} {
					if strings.Contains(p, set) {
						found[set] = true
					}
				}
				if !strings.Contains(p, "Tid Scan on tasks") || strings.Contains(p, "Seq Scan on tasks") {
					t.Errorf("the rows are not found by their ctid:\n%s", p)
				}
			}
			want := []string{"SET delayed = ", "SET status = 'processing'"}
			if name == "claim_tasks" {
				want = []string{"SET delayed = ", "SET parked = "}
			}
			for _, set := range want {
				if !found[set] {
					t.Errorf("no plan of the UPDATE %s... by ctid among %d logged", set, len(plans))
				}
			}
		})
	}
}
