package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/apitest"
)

func TestGenerateHonoursRetryAfter(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := imagegentest.NewClock(time.Time{})
	release := make(chan struct{})
	stack := apitest.New(t, apitest.Config{
		Clock: clock, Model: imagegentest.NewModel(1, imagegentest.Block(nil, release)), Limit: 3,
		// The client's waits move the clock by up to a minute at a time:
		// the lease must outlast them, or recovery may take the task
		// from its blocked worker before a renewal runs.
		Service: func(c *imagegen.Config) { c.LeaseDuration, c.GenerateTimeout = time.Hour, time.Hour },
	})
	svc, key := stack.Service, stack.User("u", 5)
	srv := httptest.NewServer(stack.Mux)
	defer srv.Close()
	go func() { _ = svc.Run(ctx) }()

	var slept []time.Duration
	polls := 0
	c := &client{base: srv.URL + "/api/v1", key: key, http: srv.Client(), every: 5 * time.Second,
		// Instead of sleeping, move the server's clock; finish the task
		// once the client has met a 429; it keeps polling until then.
		sleep: func(_ context.Context, d time.Duration) error {
			slept = append(slept, d)
			clock.Advance(d)
			if polls++; polls == 4 {
				close(release)
			}
			return nil
		}}
	task, err := c.generate(ctx, request{Scene: "text-to-image", Prompt: "a fox"})
	is.NoErr(err)
	is.Equal(task.Status, "success")
	is.Equal(len(task.Images), 1)
	is.True(strings.HasPrefix(task.Images[0], srv.URL))
	var waitedForLimit bool
	for _, d := range slept {
		waitedForLimit = waitedForLimit || d > 5*time.Second // a Retry-After wait
	}
	is.True(waitedForLimit)
}
