package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
)

// generateFox is the README's "Go client" snippet: submit, wait, check
// the outcome, download.
func generateFox(ctx context.Context, baseURL, apiKey string, file io.Writer) error {
	c, err := client.New(baseURL, apiKey)
	if err != nil {
		return err // e.g. an empty key
	}
	task, err := c.Generate(ctx, imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a red fox", AspectRatio: imagegen.Aspect16x9})
	if err == nil {
		err = task.Err() // a failed task is an answer: Err wraps client.ErrTaskFailed
	}
	if err == nil {
		err = c.Download(ctx, task.Images[0], file)
	}
	if errors.Is(err, imagegen.ErrInsufficientCredits) {
		return fmt.Errorf("top up first: %w", err) // the server's message is in err
	}
	return err
}

func ExampleClient_Generate() {
	_, base, key, stop, err := exampleServer(1) // alice has 1 credit
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	ctx := context.Background()

	var png bytes.Buffer
	fmt.Println(generateFox(ctx, base+"/api/v1", key, &png), bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")))
	err = generateFox(ctx, base+"/api/v1", key, io.Discard) // the balance is spent
	fmt.Println(errors.Is(err, imagegen.ErrInsufficientCredits))
	// Output:
	// <nil> true
	// true
}
