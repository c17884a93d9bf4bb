package memory

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// TestClaimReadsAParkedBacklogOnce: a claim that meets the backlog of an
// owner at its cap parks it, out of the model's queue; the next claim,
// the owner still at its cap, has none of its tasks to read. Once the
// owner's slot frees, its parked tasks are claimed, oldest first, and
// the owner is parked no more.
func TestClaimReadsAParkedBacklogOnce(t *testing.T) {
	ctx := context.Background()
	const backlog = 100
	s, clock, submitID := ownerStore(t, backlog+1)
	submit := func(i int) {
		t.Helper()
		submitID(fmt.Sprint("a", i))
		clock.Advance(time.Millisecond)
	}
	capped := imagegen.ClaimParams{Lease: time.Minute, N: 1, Limits: imagegen.Limits{OwnerConcurrency: 1}}
	submit(0)
	running, err := s.ClaimTasks(ctx, capped)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= backlog; i++ {
		submit(i)
	}
	for claim := 1; claim <= 2; claim++ {
		if got, err := s.ClaimTasks(ctx, capped); !errors.Is(err, imagegen.ErrNoTask) {
			t.Fatalf("claim %d with a at its cap: %d tasks (%v), want ErrNoTask", claim, len(got), err)
		}
		s.lock()
		m := s.models["m"]
		inQueue, parked := m.queue.count(m.queue.root), 0
		if p := m.parkedOwners["a"]; p != nil {
			parked = len(p.tasks)
		}
		// What a claim would read of model m, a at its cap: none.
		read := 0
		for _, c := range s.cursors(nil, func(owner string) bool { return owner != "a" }) {
			for ; c.at != 0; s.advance(&c) {
				read++
			}
		}
		s.mu.Unlock()
		if inQueue != 0 || parked != backlog || read != 0 {
			t.Fatalf("after claim %d: the model's queue holds %d of a's tasks, a's parked queue %d, a claim would read %d; want 0, %d, 0",
				claim, inQueue, parked, read, backlog)
		}
	}

	if err := s.CompleteTask(ctx, running[0].ID, running[0].Attempt, nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= backlog; i++ {
		got, err := s.ClaimTasks(ctx, capped)
		if err != nil || got[0].ID != fmt.Sprint("a", i) {
			t.Fatalf("claim after a's slot freed: %v (%v), want a%d", got, err, i)
		}
		if err := s.CompleteTask(ctx, got[0].ID, got[0].Attempt, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	s.lock()
	defer s.mu.Unlock()
	if n := len(s.models["m"].parkedOwners); n != 0 {
		t.Fatalf("%d owners parked with nothing pending", n)
	}
}

// TestParkedOwnerBeyondTheWindowKeepsItsOrder: with more owners parked
// than a claim looks at, an owner with a free slot that the claim does
// not look at has its later task, met in the model's queue, parked
// behind its older ones, not claimed before them; the ring comes round
// to it within (parked owners ÷ parkedLook) claims, its oldest first.
func TestParkedOwnerBeyondTheWindowKeepsItsOrder(t *testing.T) {
	ctx := context.Background()
	clock := imagegentest.NewClock(time.Time{})
	s, err := New(Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	const owners = parkedLook + 6
	submit := func(owner string, i int) {
		t.Helper()
		task := &imagegen.Task{ID: fmt.Sprint(owner, "-", i), Owner: owner, Cost: 1, Model: "m", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
		if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Millisecond)
	}
	capped := imagegen.ClaimParams{Lease: time.Minute, N: owners, Limits: imagegen.Limits{OwnerConcurrency: 1}}
	for o := range owners {
		owner := fmt.Sprint("o", o)
		if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 4, Ref: "g"}); err != nil {
			t.Fatal(err)
		}
		submit(owner, 0)
	}
	running, err := s.ClaimTasks(ctx, capped) // one each: every owner at its cap
	if err != nil || len(running) != owners {
		t.Fatalf("first claim: %d tasks (%v), want %d", len(running), err, owners)
	}
	for o := range owners {
		submit(fmt.Sprint("o", o), 1)
		submit(fmt.Sprint("o", o), 2)
	}
	capped.N = 1
	if got, err := s.ClaimTasks(ctx, capped); !errors.Is(err, imagegen.ErrNoTask) {
		t.Fatalf("claim with every owner at its cap: %d tasks (%v), want ErrNoTask", len(got), err)
	}
	s.lock()
	last := s.models["m"].look.prev.owner // looked at last: beyond the next claim's window
	s.mu.Unlock()
	for _, r := range running {
		if r.Owner == last {
			if err := s.CompleteTask(ctx, r.ID, r.Attempt, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	submit(last, 3) // in the model's queue, behind last's parked tasks
	var got []string
	for range (owners + parkedLook - 1) / parkedLook {
		claimed, err := s.ClaimTasks(ctx, capped)
		if err == nil {
			got = append(got, claimed[0].ID)
		}
	}
	if want := []string{last + "-1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("claims as the ring came round to %s: %v, want %v (its oldest)", last, got, want)
	}
}
