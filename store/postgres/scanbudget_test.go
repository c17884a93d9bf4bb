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

// A claim passes over ClaimScan tasks of a model's queue that may not
// start (not ready, or their owner at its cap) and takes the next one
// that may, as the memory and Redis stores do (their walks drop a queue
// once it has passed over more than ClaimScan). Migration 20's claims
// dropped the queue as they passed over the ClaimScan-th, one short of
// that: with exactly ClaimScan held tasks at a model's head, the task
// behind them was left pending while the claim returned nothing.
func TestClaimPassesOverClaimScanTasks(t *testing.T) {
	for _, c := range []struct {
		name   string
		merged bool // another model's task after all of them
		capped bool // the held tasks' owner at its cap, not the tasks not ready
	}{
		{"not ready, one model", false, false},
		{"not ready, merged", true, false},
		{"owner cap, one model", false, true},
		{"owner cap, merged", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			pool := pgtest.Connect(t)
			s := pgtest.NewStore(t, pool, postgres.Config{})
			schema := pgx.Identifier{s.Schema()}.Sanitize()
			for _, o := range []string{"a", "b", "c"} {
				if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: o, Kind: imagegen.LedgerGrant, Amount: 1000, Ref: "g"}); err != nil {
					t.Fatal(err)
				}
			}
			running := 0
			if c.capped {
				running = 2 // a's cap: the first two claimed below
			}
			for i := range imagegen.ClaimScan + running {
				if _, err := s.CreateTask(ctx, newTask(fmt.Sprintf("a%03d", i), "a"), imagegen.CreateParams{}); err != nil {
					t.Fatal(err)
				}
			}
			if running > 0 {
				if got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Hour, N: running}); err != nil || len(got) != running {
					t.Fatalf("claim a's first tasks: %v, %v", got, err)
				}
			}
			want := []string{"b"}
			if _, err := s.CreateTask(ctx, newTask("b", "b"), imagegen.CreateParams{}); err != nil {
				t.Fatal(err)
			}
			if c.merged {
				task := newTask("c", "c")
				task.Model = "z"
				if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
					t.Fatal(err)
				}
				want = append(want, "c")
			}
			// a's pending tasks come first, ClaimScan of them, then b's,
			// then c's (of another model).
			if _, err := pool.Exec(ctx, fmt.Sprintf(`UPDATE %s.tasks SET tag = CASE owner WHEN 'a' THEN 0 WHEN 'b' THEN 1 ELSE 2 END
				WHERE status = 'pending'`, schema)); err != nil {
				t.Fatal(err)
			}
			l := imagegen.Limits{}
			if c.capped {
				l.OwnerConcurrency = 2
			} else if _, err := pool.Exec(ctx, fmt.Sprintf(`UPDATE %s.tasks SET run_after = now() + interval '1 hour'
				WHERE status = 'pending' AND owner = 'a'`, schema)); err != nil {
				t.Fatal(err)
			}
			tasks, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 4, Limits: l})
			var got []string
			for _, task := range tasks {
				got = append(got, task.ID)
			}
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("claimed %v, %v; want %v", got, err, want)
			}
		})
	}
}
