package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/store/memory"
)

// A task's life in the store: charged at creation, claimed with a lease,
// completed by the lease holder, removed after the retention period.
func Example() {
	ctx := context.Background()
	clock := imagegentest.NewClock(time.Time{})
	store, err := memory.New(memory.Config{Clock: clock, Retention: time.Hour})
	if err != nil {
		panic(err)
	}

	_, _ = store.AddEntry(ctx, imagegen.LedgerEntry{Owner: "alice", Kind: imagegen.LedgerGrant, Amount: 5, Ref: "grant:welcome"})
	balance, _ := store.CreateTask(ctx, &imagegen.Task{
		ID: "t1", Owner: "alice", Model: "placeholder", Cost: 2,
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a red fox"},
	}, imagegen.CreateParams{})
	fmt.Println("balance after submit:", balance)

	task, _ := store.ClaimTask(ctx, 30*time.Second)
	fmt.Println("claimed:", task.ID, task.Status, "attempt", task.Attempt)
	_ = store.CompleteTask(ctx, task.ID, task.Attempt, []imagegen.Image{{ID: "img1", ContentType: "image/png", Size: 3}}, nil)
	done, _ := store.Task(ctx, "alice", "t1")
	fmt.Println("status:", done.Status, done.Images)

	clock.Advance(time.Hour)
	_, err = store.Task(ctx, "alice", "t1")
	fmt.Println("after retention:", err)
	// Output:
	// balance after submit: 3
	// claimed: t1 processing attempt 1
	// status: success [img1]
	// after retention: imagegen: task not found
}
