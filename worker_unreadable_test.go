package imagegen_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
)

// unreadableInClaims is a store whose claims report, beside the tasks
// they return, a task they claimed but could not read and failed, as
// the Redis and PostgreSQL stores do for a task whose stored data does
// not decode.
type unreadableInClaims struct{ imagegen.Store }

func (s unreadableInClaims) ClaimTasks(ctx context.Context, p imagegen.ClaimParams) ([]*imagegen.Task, error) {
	tasks, err := s.Store.ClaimTasks(ctx, p)
	if err != nil {
		return tasks, err
	}
	return tasks, &imagegen.UnreadableTasksError{Tasks: []imagegen.UnreadableTask{{
		ID: "bad", Model: "scripted", Attempt: 1, Err: errors.New("request: invalid character"), Failed: true, Refund: 1,
	}}}
}

// withUnreadableInClaims makes the fixture's store an unreadableInClaims.
func withUnreadableInClaims(c *imagegen.Config) { c.Store = unreadableInClaims{c.Store} }

// The tasks a claim returns along with an *imagegen.UnreadableTasksError
// are claimed: the worker runs them (dropped, they stayed leased to no
// one until their leases ran out), and logs and counts the unreadable
// task the store failed.
func TestWorkerRunsTheTasksClaimedBesideAnUnreadableOne(t *testing.T) {
	t.Run("RunOnce", func(t *testing.T) {
		is := is.New(t)
		var logs bytes.Buffer
		rec := &recorder{}
		f := newFixture(t, imagegentest.NewModel(1), withUnreadableInClaims, logTo(&logs),
			func(c *imagegen.Config) { c.Observer = rec })
		sub := f.submitFunded(t, "u")
		is.True(f.runOnce(t))
		is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusSuccess)
		is.True(strings.Contains(logs.String(), `"msg":"claimed task could not be read; failed and refunded","task_id":"bad"`))
		events := rec.list()
		is.True(slices.Contains(events, `finished scripted failed "internal"`)) // the unreadable task, counted
		is.True(slices.Contains(events, "refunded 1"))
	})
	t.Run("Run", func(t *testing.T) {
		is := is.New(t)
		f := newFixture(t, imagegentest.NewModel(1), withUnreadableInClaims)
		f.funded(t, "u", 3)
		var ids []string
		for range 3 {
			ids = append(ids, f.submit(t, "u").TaskID)
		}
		cancel, stopped := f.runInBackground()
		testenv.Eventually(t, 5*time.Second, "every task succeeds", func() bool { return f.succeeded(t, "u", ids) })
		cancel()
		is.NoErr(<-stopped)
		is.Equal(len(f.model.Calls()), 3) // each task ran once
	})
}
