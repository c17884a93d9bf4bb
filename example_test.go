package imagegen_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/store/memory"
)

// A service on the memory store with a scripted model: grant credits,
// submit a task, run it, read it back.
func Example() {
	ctx := context.Background()
	store, err := memory.New(memory.Config{})
	if err != nil {
		panic(err)
	}
	svc, err := imagegen.New(imagegen.Config{
		Store:  store,
		Model:  imagegentest.NewModel(2), // costs 2 credits, makes a tiny PNG
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	if _, err := svc.Grant(ctx, "alice", 5, "signup"); err != nil {
		panic(err)
	}

	sub, err := svc.Submit(ctx, "alice", imagegen.Request{
		Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse at dusk", AspectRatio: imagegen.Aspect16x9,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(sub.Status, sub.CreditsUsed, sub.CreditsRemaining)

	if _, err := svc.RunOnce(ctx); err != nil { // a worker's turn, now
		panic(err)
	}
	task, err := svc.Task(ctx, "alice", sub.TaskID)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.Status, len(task.Images))

	_, err = svc.Task(ctx, "bob", sub.TaskID) // another user's task does not exist for them
	fmt.Println(errors.Is(err, imagegen.ErrTaskNotFound))
	// Output:
	// pending 2 3
	// success 1
	// true
}

// Submit checks the request and the balance before anything is stored.
func ExampleService_Submit_errors() {
	ctx := context.Background()
	store, err := memory.New(memory.Config{})
	if err != nil {
		panic(err)
	}
	svc, err := imagegen.New(imagegen.Config{
		Store: store, Model: imagegentest.NewModel(3), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	_, err = svc.Submit(ctx, "alice", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: ""})
	var ve *imagegen.ValidationError
	fmt.Println(errors.As(err, &ve), ve.Field, errors.Is(err, imagegen.ErrInvalidParams))

	_, err = svc.Submit(ctx, "alice", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a fox"})
	fmt.Println(errors.Is(err, imagegen.ErrInsufficientCredits))
	// Output:
	// true prompt true
	// true
}

// The host app's own pages spend from the same balance as the API.
func ExampleService_ChargeWeb() {
	ctx := context.Background()
	store, err := memory.New(memory.Config{})
	if err != nil {
		panic(err)
	}
	svc, err := imagegen.New(imagegen.Config{
		Store: store, Model: imagegentest.NewModel(1), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	if _, err := svc.Grant(ctx, "alice", 10, "invoice-7"); err != nil {
		panic(err)
	}
	res, err := svc.ChargeWeb(ctx, "alice", 3, "order-981")
	fmt.Println(res.Balance, res.AlreadyApplied, err)
	res, err = svc.ChargeWeb(ctx, "alice", 3, "order-981") // the same reference charges once
	fmt.Println(res.Balance, res.AlreadyApplied, err)
	_, err = svc.ChargeWeb(ctx, "alice", 3, "") // a reference is required
	fmt.Println(errors.Is(err, imagegen.ErrInvalidParams))
	balance, err := svc.Balance(ctx, "alice")
	fmt.Println(balance, err)
	// Output:
	// 7 false <nil>
	// 7 true <nil>
	// true
	// 7 <nil>
}
