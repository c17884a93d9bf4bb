package memory

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// TestClaimMovesRetriesAsideBounded: a claim moves at most delayMost
// retries waiting out their delay out of a model's queue, then leaves
// the model; the next claim moves the rest, and takes the task behind
// them. Once due, at most delayMost move back a claim, the earliest
// RunAfter first, and they are claimed by their tags.
func TestClaimMovesRetriesAsideBounded(t *testing.T) {
	ctx := context.Background()
	const retries = delayMost + 10
	s, clock, submit := ownerStore(t, retries+1)
	one := imagegen.ClaimParams{Lease: time.Minute, N: 1}
	for i := range retries {
		submit(fmt.Sprint("r", i))
	}
	for i := range retries {
		got, err := s.ClaimTasks(ctx, one)
		if err != nil {
			t.Fatal(err)
		}
		// The later retries wait longer: they are moved back later.
		if err := s.RetryTask(ctx, got[0].ID, got[0].Attempt, time.Minute+time.Duration(i)*time.Millisecond, "e"); err != nil {
			t.Fatal(err)
		}
	}
	submit("newer")
	counts := func() (queued, delayed int) {
		s.lock()
		defer s.mu.Unlock()
		m := s.models["m"]
		return m.queue.count(m.queue.root), m.delayed.count(m.delayed.root)
	}
	if got, err := s.ClaimTasks(ctx, one); !errors.Is(err, imagegen.ErrNoTask) {
		t.Fatalf("first claim: %d tasks (%v), want none: it moves delayMost retries aside and leaves the model", len(got), err)
	}
	if q, d := counts(); q != retries-delayMost+1 || d != delayMost {
		t.Fatalf("after the first claim: %d queued, %d delayed; want %d, %d", q, d, retries-delayMost+1, delayMost)
	}
	got, err := s.ClaimTasks(ctx, one)
	if err != nil || got[0].ID != "newer" {
		t.Fatalf("second claim: %v, %v; want the newer task", got, err)
	}
	if q, d := counts(); q != 0 || d != retries {
		t.Fatalf("after the second claim: %d queued, %d delayed; want 0, %d", q, d, retries)
	}
	clock.Advance(time.Hour)
	got, err = s.ClaimTasks(ctx, one)
	if err != nil || got[0].ID != "r0" {
		t.Fatalf("claim once due: %v, %v; want r0", got, err)
	}
	if q, d := counts(); q != delayMost-1 || d != retries-delayMost {
		t.Fatalf("after the first claim once due: %d queued, %d delayed; want %d, %d", q, d, delayMost-1, retries-delayMost)
	}
	for i := 1; i < retries; i++ {
		got, err := s.ClaimTasks(ctx, one)
		if err != nil || got[0].ID != fmt.Sprint("r", i) {
			t.Fatalf("claim %d once due: %v, %v; want r%d", i, got, err, i)
		}
	}
	if q, d := counts(); q != 0 || d != 0 || len(s.models["m"].due) != 0 {
		t.Fatalf("at the end: %d queued, %d delayed, %d due entries; want none", q, d, len(s.models["m"].due))
	}
}
