package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// waitingRetries inserts, in schema (sanitized), owner a's n pending
// tasks of model m waiting out their delay for an hour (d1 .. dn, tags
// 11 .. 10+n, oldest first), and a's ready task "new" behind them.
func waitingRetries(t *testing.T, pool *pgxpool.Pool, schema string, n int) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), fmt.Sprintf(`
		INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag, attempt)
		SELECT 'd' || i, 'a', '{}', 'm', 1, 'pending', now() + interval '1 hour', now(), now(), 10 + i, 1
		FROM generate_series(1, %[2]d) i;
		INSERT INTO %[1]s.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag)
		VALUES ('new', 'a', '{}', 'm', 1, 'pending', now() - interval '1 second', now(), now(), 100000)`, schema, n)); err != nil {
		t.Fatal(err)
	}
}

// delayedOf counts the pending tasks set aside as delayed retries.
func delayedOf(t *testing.T, pool *pgxpool.Pool, schema string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT count(*) FROM %s.tasks
		WHERE status = 'pending' AND delayed`, schema)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A claim sets aside at most 1024 retries of a model's queue waiting
// out their delay (migration 27), uncounted against its look-ahead: 1500
// of them at the head of the queue are set aside over two claims, the
// second of which takes the ready task behind them (before migration 27
// no claim took it while they waited). Once due, a claim gives back at
// most 1024 of them, the earliest due first, and the claims take them in
// their tags' order, before the task queued after them. Both claims run
// it: claim_free (no caps) and claim_tasks (an owner cap); the claims
// that take the rest are claim_free's.
func TestDelayedRetriesAreSetAsideInBoundedSteps(t *testing.T) {
	const retries = 1500
	for _, c := range []struct {
		name string
		l    imagegen.Limits
	}{
		{"claim_free", imagegen.Limits{}},
		{"claim_tasks", imagegen.Limits{OwnerConcurrency: 100}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			pool := pgtest.Connect(t)
			s := pgtest.NewStore(t, pool, postgres.Config{})
			schema := pgx.Identifier{s.Schema()}.Sanitize()
			waitingRetries(t, pool, schema, retries)
			claimNone(t, s, 1, c.l, "the claim that sets aside the first 1024 retries")
			if got := delayedOf(t, pool, schema); got != 1024 {
				t.Fatalf("the first claim set aside %d retries; want 1024", got)
			}
			if got := claimIDsWith(t, s, 1, c.l); !slices.Equal(got, []string{"new"}) {
				t.Fatalf("the second claim took %v; want [new], behind the retries set aside", got)
			}
			if got := delayedOf(t, pool, schema); got != retries {
				t.Fatalf("%d retries set aside after two claims; want %d", got, retries)
			}
			// Due now, d477 .. d1500 (1024 of them) a second earlier than
			// d1 .. d476.
			if _, err := pool.Exec(ctx, fmt.Sprintf(`UPDATE %s.tasks SET run_after = now() - interval '1 minute'
				+ CASE WHEN tag > 486 THEN interval '0' ELSE interval '1 second' END
				WHERE status = 'pending' AND id <> 'new'`, schema)); err != nil {
				t.Fatal(err)
			}
			addPending(t, pool, schema, "later", "a", 200000)
			want := func(from, to int) []string {
				var ids []string
				for i := from; i <= to; i++ {
					ids = append(ids, fmt.Sprintf("d%d", i))
				}
				return ids
			}
			// The first claim gives back d477 .. d1500, due first, and takes
			// them in order; d1 .. d476 wait for the next.
			if got := claimIDsWith(t, s, 16, c.l); !slices.Equal(got, want(477, 492)) {
				t.Fatalf("the first claim once due took %v; want d477 .. d492", got)
			}
			if got := delayedOf(t, pool, schema); got != 476 {
				t.Fatalf("%d retries still set aside after a claim once due; want 476 (it gives back 1024)", got)
			}
			if got := claimIDsWith(t, s, 16, c.l); !slices.Equal(got, want(1, 16)) {
				t.Fatalf("the second claim once due took %v; want d1 .. d16", got)
			}
			if got := delayedOf(t, pool, schema); got != 0 {
				t.Fatalf("%d retries still set aside after two claims once due; want none", got)
			}
			var order []string
			for claims := 0; claims < 200; claims++ {
				ids := claimIDsWith(t, s, 64, imagegen.Limits{})
				if len(ids) == 0 {
					break
				}
				order = append(order, ids...)
			}
			rest := append(append(want(17, 476), want(493, retries)...), "later")
			if !slices.Equal(order, rest) {
				t.Fatalf("then claimed %d tasks (first %v); want d17 .. d476, d493 .. d%d, later", len(order), order[:min(len(order), 10)], retries)
			}
		})
	}
}

// Migrating down from version 27 puts the delayed retries back in their
// models' queues: version 26's claim takes them in order once due. Up
// again, claims set them aside as before.
func TestDowngradeFrom27KeepsDelayedRetries(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	waitingRetries(t, pool, schema, 3)
	if got := claimIDsWith(t, s, 4, imagegen.Limits{}); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("claimed %v; want [new]", got)
	}
	if got := delayedOf(t, pool, schema); got != 3 {
		t.Fatalf("%d retries set aside; want 3", got)
	}
	if err := postgres.MigrateTo(ctx, pool, s.Schema(), 26); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, fmt.Sprintf(`UPDATE %s.tasks SET run_after = now() - interval '1 second'
		WHERE status = 'pending'`, schema)); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, fmt.Sprintf(`SELECT id FROM %s.claim_free(now(), interval '1 minute', 10)`, schema))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"d1", "d2", "d3"}) {
		t.Fatalf("version 26 claimed %v; want d1 to d3", ids)
	}
	if err := postgres.Migrate(ctx, pool, s.Schema()); err != nil {
		t.Fatal(err)
	}
	waiting := fmt.Sprintf(`INSERT INTO %s.tasks (id, owner, request, model, cost, status, run_after,
		created_at, updated_at, tag) VALUES ('w', 'a', '{}', 'm', 1, 'pending', now() + interval '1 hour', now(), now(), 5)`, schema)
	if _, err := pool.Exec(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	claimNone(t, s, 4, imagegen.Limits{}, "a claim with only a retry waiting")
	if got := delayedOf(t, pool, schema); got != 1 {
		t.Fatalf("%d retries set aside after the upgrade; want 1", got)
	}
}
