package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// BenchmarkClaims measures one claim (of one task, fair share and the
// given caps in force) with 10,000 pending tasks held by one owner, and
// by 10,000 owners of one task each: a claim's cost must not grow with
// the number of owners (docs/scheduling.md). Each claimed task is
// completed and its owner submits another, outside the timing, so the
// queue keeps its shape. newStore returns a fresh, empty store.
func BenchmarkClaims(b *testing.B, newStore func(b *testing.B) imagegen.Store) {
	const pending = 10_000
	for _, tc := range []struct {
		name   string
		owners int
		limits imagegen.Limits
	}{
		{"1-owner", 1, imagegen.Limits{}},
		{"10000-owners", pending, imagegen.Limits{}},
		{"10000-owners-capped", pending, imagegen.Limits{OwnerConcurrency: 2, ModelConcurrency: map[string]int{"test": 1 << 20}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := newStore(b)
			for o := range tc.owners {
				owner := fmt.Sprintf("owner-%d", o)
				n := pending / tc.owners
				if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: int64(n + b.N), Ref: "bench"}); err != nil {
					b.Fatal(err)
				}
				for range n {
					if _, err := s.CreateTask(ctx, newTask(owner, 1), imagegen.CreateParams{}); err != nil {
						b.Fatal(err)
					}
				}
			}
			p := imagegen.ClaimParams{Lease: time.Minute, N: 1, Limits: tc.limits}
			b.ResetTimer()
			for range b.N {
				got, err := s.ClaimTasks(ctx, p)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				t := got[0]
				if err := s.CompleteTask(ctx, t.ID, t.Attempt, nil, nil); err != nil {
					b.Fatal(err)
				}
				if _, err := s.CreateTask(ctx, newTask(t.Owner, 1), imagegen.CreateParams{}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkClaimAllOwnersAtCap measures a claim when every owner with
// pending tasks is at its concurrency cap (10 owners, each with 2 tasks
// running under a cap of 2 and 1,000 pending): there is nothing to
// start. It is what each claim of idle workers costs in that state. The
// first such claim, which finds the owners at their caps, is timed on
// its own and reported as first-claim-ms: a store that sets the owners'
// tasks aside then (docs/scheduling.md, "parked owners") does its work
// there, once. newStore returns a fresh, empty store.
func BenchmarkClaimAllOwnersAtCap(b *testing.B, newStore func(b *testing.B) imagegen.Store) {
	const owners, pending, running = 10, 1000, 2
	s := newStore(b)
	limits := imagegen.Limits{OwnerConcurrency: running}
	for o := range owners {
		owner := fmt.Sprintf("owner-%d", o)
		if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: pending + running, Ref: "bench"}); err != nil {
			b.Fatal(err)
		}
		for range pending + running {
			if _, err := s.CreateTask(ctx, newTask(owner, 1), imagegen.CreateParams{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Hour, N: owners * running, Limits: limits})
	if err != nil || len(got) != owners*running {
		b.Fatalf("the first claim took %d tasks (%v); want %d, each owner at its cap", len(got), err, owners*running)
	}
	claimNone := func() {
		if got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Hour, N: 1, Limits: limits}); !errors.Is(err, imagegen.ErrNoTask) {
			b.Fatalf("claim with every owner at its cap: %d tasks (%v); want ErrNoTask", len(got), err)
		}
	}
	start := time.Now()
	claimNone()
	first := time.Since(start)
	b.ResetTimer()
	for range b.N {
		claimNone()
	}
	b.StopTimer()
	b.ReportMetric(float64(first.Microseconds())/1000, "first-claim-ms") // after the loop: ResetTimer drops reported metrics
}
