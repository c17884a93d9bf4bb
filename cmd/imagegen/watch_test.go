package main

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
)

func TestDescribeStatusAndTiming(t *testing.T) {
	is := is.New(t)
	pos := func(n int) *int { return &n }
	is.Equal(describeStatus(&client.Task{Status: imagegen.StatusPending, QueuePosition: pos(3)}), "pending (3 ahead in the queue)")
	is.Equal(describeStatus(&client.Task{Status: imagegen.StatusPending, QueuePosition: pos(0)}), "pending (next in the queue)")
	is.Equal(describeStatus(&client.Task{Status: imagegen.StatusPending}), "pending") // a server without the full view
	is.Equal(describeStatus(&client.Task{Status: imagegen.StatusProcessing}), "processing")
	half := 0.5
	is.Equal(describeStatus(&client.Task{Status: imagegen.StatusProcessing, Progress: &half}), "processing (50%)")

	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	started, finished := created.Add(1500*time.Millisecond), created.Add(4*time.Second)
	seed := int64(9)
	is.Equal(timing(&client.Task{Model: "fal/flux", Seed: &seed, CreatedAt: &created, StartedAt: &started, FinishedAt: &finished}),
		"model fal/flux, seed 9, queued 1.5s, ran 2.5s")
	is.Equal(timing(&client.Task{Model: "openai/gpt-image-1", CreatedAt: &created}), "model openai/gpt-image-1") // no seed, never started
	is.Equal(timing(&client.Task{}), "")
}
