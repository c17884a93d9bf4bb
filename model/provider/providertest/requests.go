package providertest

import (
	"context"
	"errors"
	"testing"

	"github.com/imagegen/imagegen"
)

// T2I is a text-to-image request.
func T2I(prompt string, ratio imagegen.AspectRatio) imagegen.Request {
	return imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: prompt, AspectRatio: ratio}
}

// I2I is an image-to-image request with reference image URLs.
func I2I(prompt string, ratio imagegen.AspectRatio, urls ...string) imagegen.Request {
	return imagegen.Request{Scene: imagegen.SceneImageToImage, Prompt: prompt, AspectRatio: ratio, ImageInput: urls}
}

// Generate plans and runs req on m as the service does: the plan's model
// name, task "task-1", first attempt.
func Generate(ctx context.Context, m imagegen.Model, req imagegen.Request) ([]imagegen.GeneratedImage, error) {
	plan, err := m.Plan(req)
	if err != nil {
		return nil, err
	}
	return m.Generate(ctx, imagegen.Generation{TaskID: "task-1", Model: plan.Model, Request: req, Attempt: 1})
}

// ModelError returns err as the *imagegen.ModelError it must be, or
// fails the test.
func ModelError(t testing.TB, err error) *imagegen.ModelError {
	t.Helper()
	var me *imagegen.ModelError
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *imagegen.ModelError", err, err)
	}
	return me
}

// MaxSeedT2I is a text-to-image request with the largest seed a request
// may carry (imagegen.MaxSeed), for tests that the seed reaches the
// provider whole.
func MaxSeedT2I(prompt string, ratio imagegen.AspectRatio) imagegen.Request {
	req := T2I(prompt, ratio)
	seed := int64(imagegen.MaxSeed)
	req.Seed = &seed
	return req
}
