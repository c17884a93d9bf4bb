package imagegentest_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/store/memory"
)

// A scripted model fails the first attempt as a provider would (busy,
// retryable), then succeeds; the manual clock lets the retry's backoff
// pass at once, with no sleeps.
func Example() {
	ctx := context.Background()
	clock := imagegentest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	busy := &imagegen.ModelError{Provider: "scripted", Retryable: true, Message: "busy"}
	model := imagegentest.NewModel(1, imagegentest.Fail(busy), imagegentest.Succeed())
	store, err := memory.New(memory.Config{Clock: clock})
	if err != nil {
		panic(err)
	}
	svc, err := imagegen.New(imagegen.Config{
		Store: store, Model: model, Clock: clock,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	if _, err := svc.Grant(ctx, "alice", 1, "signup"); err != nil {
		panic(err)
	}
	sub, err := svc.Submit(ctx, "alice", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a red fox"})
	if err != nil {
		panic(err)
	}

	for range 2 {
		if _, err := svc.RunOnce(ctx); err != nil {
			panic(err)
		}
		task, err := svc.Task(ctx, "alice", sub.TaskID)
		if err != nil {
			panic(err)
		}
		fmt.Println(task.Status, task.Attempt)
		clock.Advance(time.Minute) // past the retry backoff
	}
	fmt.Println(len(model.Calls()))
	// Output:
	// pending 1
	// success 2
	// 2
}
