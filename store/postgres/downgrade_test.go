package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// Processes of version 19 keep claiming in fair order against the
// latest schema (claim_free called with three arguments), and migrating
// down to version 19 leaves a schema whose claims (version 19's
// claim_free and claim_tasks) take the pending tasks in the same order;
// up again, the store claims as before.
func TestVersion19ClaimsAcrossTheQueuePerModel(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	want := submitMixed(t, s, 60, 11)
	claim := func(sql string) []string {
		t.Helper()
		rows, err := pool.Query(ctx, fmt.Sprintf(sql, schema))
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	const free19 = `SELECT id FROM %s.claim_free(now(), interval '1 minute', 10)`
	got := claim(free19) // a process of version 19 on the latest schema
	if err := postgres.MigrateTo(ctx, pool, s.Schema(), 19); err != nil {
		t.Fatal(err)
	}
	got = append(got, claim(free19)...)
	got = append(got, claim(`SELECT id FROM %s.claim_tasks(now(), interval '1 minute', 10, 256, 0,
		ARRAY['m0'], ARRAY[100], ARRAY[0])`)...)
	var v int64
	if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT %s.vtime(now())`, schema)).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if err := postgres.Migrate(ctx, pool, s.Schema()); err != nil {
		t.Fatal(err)
	}
	for len(got) < len(want) {
		tasks, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 7})
		if err != nil {
			t.Fatalf("claim after %d: %v", len(got), err)
		}
		for _, task := range tasks {
			got = append(got, task.ID)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("claimed %v,\nwant %v", got, want)
	}
}
