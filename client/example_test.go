package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
)

// The client against a real server on loopback (exampleServer: the
// standard stack on the in-memory store, with a scripted model that costs
// 1 credit and workers running), for a user with 1 credit.
func Example() {
	_, base, key, stop, err := exampleServer(1)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	ctx := context.Background()

	c, err := client.New(base, key)
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
	// submitted: pending credits used 1 left 0
	// task: success 1 image
	// downloaded a PNG: true
	// out of credits: true
	// 403 insufficient_credits: not enough credits for this generation
}
