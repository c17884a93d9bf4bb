package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "o", Kind: imagegen.LedgerGrant, Amount: 2000, Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < 2000; i += 16 {
				if _, err := s.CreateTask(ctx, newTask(fmt.Sprintf("t%04d", i), "o"), imagegen.CreateParams{}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
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
