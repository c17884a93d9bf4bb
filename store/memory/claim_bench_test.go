package memory_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/store/storetest"
)

// BenchmarkClaims: one claim with 10,000 pending tasks of one owner or
// of 10,000 owners.
func BenchmarkClaims(b *testing.B) {
	storetest.BenchmarkClaims(b, newBenchStore)
}

// BenchmarkClaimAllOwnersAtCap: a claim that finds every owner at its
// cap (storetest.BenchmarkClaimAllOwnersAtCap).
func BenchmarkClaimAllOwnersAtCap(b *testing.B) {
	storetest.BenchmarkClaimAllOwnersAtCap(b, newBenchStore)
}

// newBenchStore is an empty memory store.
func newBenchStore(b *testing.B) imagegen.Store {
	s, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkClaimManyOwnersParked: a claim that finds nothing when
// 10,000 owners are each at a cap of one with one more task pending,
// parked: the claim looks at 64 of them (a running count each,
// parked.go).
func BenchmarkClaimManyOwnersParked(b *testing.B) {
	const owners = 10_000
	ctx := context.Background()
	s := newBenchStore(b)
	limits := imagegen.Limits{OwnerConcurrency: 1}
	for o := range owners {
		owner := fmt.Sprintf("owner-%d", o)
		if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 2, Ref: "bench"}); err != nil {
			b.Fatal(err)
		}
		for i := range 2 {
			t := &imagegen.Task{ID: fmt.Sprintf("%s-%d", owner, i), Owner: owner, Cost: 1, Model: "m", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
			if _, err := s.CreateTask(ctx, t, imagegen.CreateParams{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	p := imagegen.ClaimParams{Lease: time.Hour, N: owners, Limits: limits}
	if got, err := s.ClaimTasks(ctx, p); err != nil || len(got) != owners {
		b.Fatalf("the first claim took %d tasks (%v); want %d, each owner at its cap", len(got), err, owners)
	}
	p.N = 1
	for b.Loop() {
		if got, err := s.ClaimTasks(ctx, p); !errors.Is(err, imagegen.ErrNoTask) {
			b.Fatalf("claim with every owner at its cap: %d tasks (%v); want ErrNoTask", len(got), err)
		}
	}
}
