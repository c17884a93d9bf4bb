package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/internal/retry"
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
	delay := pendingPollFirst
	poll := retry.Doubling{Min: pendingPollFirst, Max: pendingPollMax}
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
			delay = poll.Next()
			continue
		default:
			return nil, err
		}
		prog.Status(describeStatus(t))
		switch t.Status {
		case imagegen.StatusSuccess, imagegen.StatusFailed:
			return t, nil
		case imagegen.StatusProcessing:
			if t, err = c.Wait(ctx, id); err != nil {
				return nil, err
			}
			prog.Status(describeStatus(t))
			return t, nil
		case imagegen.StatusPending:
			delay = poll.Next()
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

// describeStatus is the task's status as the progress line shows it: with
// its place in the queue while pending, and how far it has come while
// processing, when the server tells them.
func describeStatus(t *client.Task) string {
	if t.Status == imagegen.StatusProcessing && t.Progress != nil {
		return fmt.Sprintf("processing (%d%%)", int(*t.Progress*100))
	}
	if t.Status == imagegen.StatusPending && t.QueuePosition != nil {
		switch n := *t.QueuePosition; n {
		case 0:
			return "pending (next in the queue)"
		default:
			return fmt.Sprintf("pending (%d ahead in the queue)", n)
		}
	}
	return tableCell(string(t.Status)) // the server's: a status this command does not know is shown, then refused
}

// timing sums up how the task went, from the full view's details: the
// model, the seed, the time it queued and the time it ran. "" when the
// server sent no details.
func timing(t *client.Task) string {
	var parts []string
	if t.Model != "" {
		parts = append(parts, "model "+tableCell(t.Model))
	}
	if t.Seed != nil {
		parts = append(parts, "seed "+strconv.FormatInt(*t.Seed, 10))
	}
	if t.CreatedAt != nil && t.StartedAt != nil {
		parts = append(parts, "queued "+seconds(t.StartedAt.Sub(*t.CreatedAt)))
		if t.FinishedAt != nil {
			parts = append(parts, "ran "+seconds(t.FinishedAt.Sub(*t.StartedAt)))
		}
	}
	return strings.Join(parts, ", ")
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", max(d, 0).Seconds()) }
