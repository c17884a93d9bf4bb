package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
)

// How watchTask polls a pending task: the interval doubles from the first
// to the last, so a long queue costs at most 10 requests a minute.
const (
	pendingPollFirst = 500 * time.Millisecond
	pendingPollMax   = 6 * time.Second
	maxPollErrors    = 3 // server or network errors in a row before giving up
	spinnerInterval  = 100 * time.Millisecond
)

// watchTask waits until task id ends and returns it, showing on prog
// each status it sees. While the task is pending it polls with a growing
// interval, to see it start; once the task is processing it hands over
// to client.Wait, which long-polls until the end (from processing, the
// changes are to success or failed, or back to pending after a lost
// lease, which the user need not see). A 429 is waited out: the task is
// already paid for. A failed task is returned, not an error.
func watchTask(ctx context.Context, c *client.Client, id string, prog *progress) (*client.Task, error) {
	defer prog.spin(spinnerInterval)()
	delay, next := pendingPollFirst, pendingPollFirst
	failures := 0
	for {
		if err := sleepCtx(ctx, delay); err != nil {
			return nil, err
		}
		t, err := c.Task(ctx, id)
		switch {
		case err == nil:
			failures = 0
		case errors.Is(err, imagegen.ErrRateLimited):
			delay = 0 // the client holds the next request back until Retry-After
			continue
		case ctx.Err() == nil && client.IsTransient(err) && failures < maxPollErrors:
			failures++
			delay, next = next, min(next*2, pendingPollMax)
			continue
		default:
			return nil, err
		}
		prog.Status(string(t.Status))
		switch t.Status {
		case imagegen.StatusSuccess, imagegen.StatusFailed:
			return t, nil
		case imagegen.StatusProcessing:
			if t, err = c.Wait(ctx, id); err != nil {
				return nil, err
			}
			prog.Status(string(t.Status))
			return t, nil
		case imagegen.StatusPending:
			delay, next = next, min(next*2, pendingPollMax)
		default:
			return nil, fmt.Errorf("task %s has an unknown status %q", id, t.Status)
		}
	}
}

// sleepCtx waits for d, or less if ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
