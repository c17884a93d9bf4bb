package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// TestRetentionEmptiesTheOwnersIndexes: once retention has removed an
// owner's every task, the store keeps nothing of the owner's task index.
// An index was compacted only when its owner submitted its 64th, 128th…
// task or listed again, so every owner who made a few tasks and left
// kept an entry of the map, and its stale slots, for as long as the
// store ran.
func TestRetentionEmptiesTheOwnersIndexes(t *testing.T) {
	ctx := context.Background()
	clock := imagegentest.NewClock(time.Time{})
	s, err := New(Config{Clock: clock, Retention: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		owner := fmt.Sprintf("one-off-%d", i)
		if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 3, Ref: "g"}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			id := imagegen.NewOwnedID(owner)
			if _, err := s.CreateTask(ctx, &imagegen.Task{ID: id, Owner: owner, Cost: 1, Request: imagegen.Request{Prompt: "p"}}, imagegen.CreateParams{}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CancelTask(ctx, owner, id, imagegen.CancelParams{}); err != nil { // failed at once: retention's from now
				t.Fatal(err)
			}
		}
	}
	clock.Advance(2 * time.Minute)
	if tasks, _ := s.Len(); tasks != 0 { // Len sweeps
		t.Fatalf("%d tasks left after their retention", tasks)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.ownerTasks); n != 0 {
		t.Fatalf("the indexes of %d owners kept, whose every task retention removed", n)
	}
}
