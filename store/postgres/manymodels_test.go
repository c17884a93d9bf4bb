package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// BenchmarkClaimAmongManyModels measures a claim of one and of 64 among
// 2,000 models of one pending task each, rolled back after each op: a
// claim should cost the models' heads (the loose scan, one probe each)
// plus its batch, not its batch times the models. Migration 20's merge
// found the next model by a pass over every model's head for each model
// it turned to, so a claim of 64 took three times as long as a claim of
// one (36 against 12 ms; both pay the same loose scan); migration 21
// keeps the models in order, and a claim of 64 takes about 1.4 times a
// claim of one.
func BenchmarkClaimAmongManyModels(b *testing.B) {
	conn, schema := pendingOverModels(b, `'m' || i`)
	for _, c := range []struct{ name, sql string }{
		{"claim_free", `%s.claim_free(now(), interval '1 minute', %d)`},
		{"claim_tasks", `%s.claim_tasks(now(), interval '1 minute', %d, 256, 100, '{}', '{}', '{}')`},
	} {
		for _, n := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/%d", c.name, n), func(b *testing.B) {
				claimRolledBack(b, conn, fmt.Sprintf(c.sql, schema, n), n)
			})
		}
	}
}

// BenchmarkClaimInterleavedModels measures a claim of 64 when the next
// task is another model's at every take (20 models of 100 pending tasks
// each, their tags interleaved), rolled back after each op: the merge
// puts a model back in its place (merge_reorder) once a task.
func BenchmarkClaimInterleavedModels(b *testing.B) {
	conn, schema := pendingOverModels(b, `'m' || (i % 20)`)
	for _, c := range []struct{ name, sql string }{
		{"claim_free", `%s.claim_free(now(), interval '1 minute', 64)`},
		{"claim_tasks", `%s.claim_tasks(now(), interval '1 minute', 64, 256, 100, '{}', '{}', '{}')`},
	} {
		b.Run(c.name, func(b *testing.B) {
			claimRolledBack(b, conn, fmt.Sprintf(c.sql, schema), 64)
		})
	}
}

// pendingOverModels is a new store's schema (quoted) with 2,000 pending
// tasks of 50 owners, task i (tag i) of the model the SQL expression
// model names for it, analyzed, and a connection of its own.
func pendingOverModels(b *testing.B, model string) (*pgxpool.Conn, string) {
	ctx := context.Background()
	pool := pgtest.Connect(b)
	s := pgtest.NewStore(b, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	if _, err := pool.Exec(ctx, `
		INSERT INTO `+schema+`.tasks (id, owner, request, model, cost, status, run_after, created_at, updated_at, tag)
		SELECT 't' || i, 'o' || (i % 50), '{}', `+model+`, 1, 'pending', now() - interval '1 second', now(), now(), i
		FROM generate_series(1, 2000) i;
		ANALYZE `+schema+`.tasks`); err != nil {
		b.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(conn.Release)
	return conn, schema
}

// claimRolledBack runs the claim function call from (it claims n tasks)
// in a transaction rolled back after each op, so that every op claims
// from the same queue.
func claimRolledBack(b *testing.B, conn *pgxpool.Conn, from string, n int) {
	ctx := context.Background()
	for b.Loop() {
		tx, err := conn.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var got int
		err = tx.QueryRow(ctx, `SELECT count(*) FROM `+from).Scan(&got)
		_ = tx.Rollback(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if got != n {
			b.Fatalf("claimed %d of %d", got, n)
		}
	}
}

// The merge keeps the one fair order with many models too: tasks of 3
// owners over 17 models, queued in a random interleaving, are claimed
// in the order QueuePositions reports, in batches of any size, with and
// without limits.
func TestClaimsMergeManyModelsQueues(t *testing.T) {
	pool := pgtest.Connect(t)
	for _, l := range []imagegen.Limits{{}, {ModelConcurrency: map[string]int{"m0": 1000}, ModelRate: map[string]int{"m99": 1}}} {
		t.Run(fmt.Sprintf("limits=%v", !l.Zero()), func(t *testing.T) {
			ctx := context.Background()
			s := pgtest.NewStore(t, pool, postgres.Config{})
			const n = 150
			rng := rand.New(rand.NewPCG(5, 1))
			ids := make([]string, n)
			for _, o := range []string{"o1", "o2", "o3"} {
				if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: o, Kind: imagegen.LedgerGrant, Amount: n, Ref: "g"}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range n {
				task := newTask(fmt.Sprintf("t%03d", i), fmt.Sprintf("o%d", 1+rng.IntN(3)))
				task.Model = fmt.Sprintf("m%d", rng.IntN(17))
				if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
					t.Fatal(err)
				}
				ids[i] = task.ID
			}
			pos, err := s.QueuePositions(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]string, n)
			for i, p := range pos {
				want[p] = ids[i]
			}
			var got []string
			for size := 1; len(got) < n; size = size%13 + 1 {
				tasks, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: size, Limits: l})
				if err != nil {
					t.Fatal(err)
				}
				for _, task := range tasks {
					got = append(got, task.ID)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("claimed %v,\nwant %v", got, want)
			}
		})
	}
}
