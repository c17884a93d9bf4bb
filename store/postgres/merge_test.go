package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// submitMixed submits n tasks of three owners and three models, in a
// random interleaving, and returns their ids in claim order (by
// QueuePositions, which must number them 0 to n-1).
func submitMixed(t *testing.T, s *postgres.Store, n int, seed uint64) []string {
	t.Helper()
	ctx := context.Background()
	is := is.New(t)
	owners := []string{"o1", "o2", "o3"}
	for _, o := range owners {
		_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: o, Kind: imagegen.LedgerGrant, Amount: int64(n), Ref: "g"})
		is.NoErr(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	ids := make([]string, n)
	for i := range n {
		task := newTask(fmt.Sprintf("t%03d", i), owners[rng.IntN(len(owners))])
		task.Model = fmt.Sprintf("m%d", rng.IntN(3))
		_, err := s.CreateTask(ctx, task, imagegen.CreateParams{})
		is.NoErr(err)
		ids[i] = task.ID
	}
	pos, err := s.QueuePositions(ctx, ids)
	is.NoErr(err)
	order := make([]string, n)
	for i, p := range pos {
		if p < 0 || p >= n || order[p] != "" {
			t.Fatalf("queue positions %v are not 0 to %d", pos, n-1)
		}
		order[p] = ids[i]
	}
	return order
}

// The claims take the models' queues (migration 20) merged in the one
// fair order that QueuePositions reports, in batches of any size, with
// or without limits (claim_free and claim_tasks).
func TestClaimsMergeTheModelsQueues(t *testing.T) {
	pool := pgtest.Connect(t)
	for _, l := range []imagegen.Limits{{}, {ModelConcurrency: map[string]int{"m0": 1000}, ModelRate: map[string]int{"m9": 1}}} {
		t.Run(fmt.Sprintf("limits=%v", !l.Zero()), func(t *testing.T) {
			ctx := context.Background()
			is := is.New(t)
			s := pgtest.NewStore(t, pool, postgres.Config{})
			want := submitMixed(t, s, 90, 7)
			var got []string
			for size := 1; len(got) < len(want); size = size%9 + 1 {
				tasks, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: size, Limits: l})
				is.NoErr(err)
				is.True(len(tasks) == min(size, len(want)-len(got))) // a full batch while tasks remain
				for _, task := range tasks {
					got = append(got, task.ID)
				}
			}
			is.Equal(got, want)
		})
	}
}

// The owner cap holds across the models' queues within one claim: each
// task is checked as it is taken, after the claim's own earlier takes.
func TestOwnerCapHoldsAcrossModelsInOneClaim(t *testing.T) {
	ctx := context.Background()
	is := is.New(t)
	s := pgtest.NewStore(t, pgtest.Connect(t), postgres.Config{})
	want := submitMixed(t, s, 60, 3)
	l := imagegen.Limits{OwnerConcurrency: 2}
	tasks, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 64, Limits: l})
	is.NoErr(err)
	per := map[string]int{}
	for _, task := range tasks {
		per[task.Owner]++
	}
	is.Equal(per, map[string]int{"o1": 2, "o2": 2, "o3": 2})
	_, err = s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 64, Limits: l})
	is.Equal(err, imagegen.ErrNoTask)
	// Without the cap the rest come in claim order, the capped claim's
	// passes having changed nothing.
	rest, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 64})
	is.NoErr(err)
	taken := map[string]bool{}
	for _, task := range tasks {
		taken[task.ID] = true
	}
	var left, got []string
	for _, id := range want {
		if !taken[id] {
			left = append(left, id)
		}
	}
	for _, task := range rest {
		got = append(got, task.ID)
	}
	is.Equal(got, left)
}
