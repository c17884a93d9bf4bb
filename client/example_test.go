package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/google/uuid"
	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/ratelimit"
	"github.com/imagegen/imagegen/store/memory"
)

// The client against a real server on loopback: the HTTP API on the
// in-memory store, with a scripted model that costs 2 credits.
func Example() {
	ctx := context.Background()
	svc, _ := imagegen.New(imagegen.Config{
		Store:  memory.New(memory.Config{}),
		Model:  imagegentest.NewModel(2),
		Logger: slog.New(slog.DiscardHandler),
	})
	key, _, _ := svc.CreateKey(ctx, "alice")
	_, _ = svc.Grant(ctx, "alice", 3, uuid.NewString())
	limiter, _ := ratelimit.NewMemory(ratelimit.MemoryConfig{})
	api, _ := httpapi.New(httpapi.Config{Service: svc, Limiter: limiter, Logger: slog.New(slog.DiscardHandler)})
	mux := http.NewServeMux()
	api.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	c, err := client.New(srv.URL, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	sub, err := c.Submit(ctx, imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a red fox"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("submitted:", sub.Status, "credits used", sub.CreditsUsed, "left", sub.CreditsRemaining)

	_, _ = svc.RunOnce(ctx) // the server's worker (svc.Run in a real server)

	task, err := c.Wait(ctx, sub.TaskID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("task:", task.Status, len(task.Images), "image")

	var png bytes.Buffer
	if err := c.Download(ctx, task.Images[0], &png); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("downloaded a PNG:", bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")))

	_, err = c.Submit(ctx, imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "another fox"})
	fmt.Println("out of credits:", errors.Is(err, imagegen.ErrInsufficientCredits))
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code+":", apiErr.Message)
	}
	// Output:
	// submitted: pending credits used 2 left 1
	// task: success 1 image
	// downloaded a PNG: true
	// out of credits: true
	// 403 insufficient_credits: not enough credits for this generation
}
