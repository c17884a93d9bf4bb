package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// A claim passes over a model with a rate whose row another claim holds,
// as it passes over a capped model whose lock another claim holds: it
// never waits for that claim to commit. claim_tasks (migrations 8 to
// 20) made sure of the model's row with INSERT ... ON CONFLICT DO
// NOTHING before locking it SKIP LOCKED, and the insert waited for any
// transaction that had inserted or updated the row (a claim that had
// just started one of the model's tasks and pushed its next start), so
// concurrent claims of a rated model ran one after another, and two
// claims that reached two rated models in opposite orders deadlocked.
func TestClaimDoesNotWaitForAnotherClaimsRatedModel(t *testing.T) {
	for _, first := range []bool{true, false} {
		t.Run(fmt.Sprintf("first=%v", first), func(t *testing.T) {
			ctx := context.Background()
			pool := pgtest.Connect(t)
			s := pgtest.NewStore(t, pool, postgres.Config{})
			if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "o", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"}); err != nil {
				t.Fatal(err)
			}
			for i, model := range []string{"x", "x", "x", "y"} {
				task := newTask(fmt.Sprintf("t%d", i), "o")
				task.Model = model
				if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
					t.Fatal(err)
				}
			}
			l := imagegen.Limits{ModelRate: map[string]int{"x": 6000}}
			if !first {
				// The models row exists: a claim made it (and x's next start
				// is 10 ms on).
				if _, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 1, Limits: l}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			// A claim of x's next task, not yet committed.
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			var id string
			if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT id FROM %s.claim_tasks(now(), interval '1 minute', 1, 256, 0,
				ARRAY['x'], ARRAY[0], ARRAY[6000])`, pgx.Identifier{s.Schema()}.Sanitize())).Scan(&id); err != nil {
				t.Fatal(err)
			}
			// Another claim meanwhile passes x over and takes y's task.
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			tasks, err := s.ClaimTasks(cctx, imagegen.ClaimParams{Lease: time.Minute, N: 4, Limits: l})
			if errors.Is(cctx.Err(), context.DeadlineExceeded) {
				t.Fatalf("the claim waited for the other claim's transaction (%v)", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tasks) != 1 || tasks[0].Model != "y" {
				t.Fatalf("claimed %v, want y's task alone", tasks)
			}
		})
	}
}
