package imagegen_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
)

// partialClaims is a store whose claims that get tasks report, beside
// them, a part of the store they could not ask (and, with unreadable,
// a task they claimed but could not read, joined), as a sharded Redis
// store does when a shard fails after others gave tasks.
type partialClaims struct {
	imagegen.Store
	unreadable bool
}

func (s partialClaims) ClaimTasks(ctx context.Context, p imagegen.ClaimParams) ([]*imagegen.Task, error) {
	tasks, err := s.Store.ClaimTasks(ctx, p)
	if err != nil {
		return tasks, err
	}
	err = &imagegen.PartialClaimError{Part: "shard {imagegen:1.7}", Err: io.ErrUnexpectedEOF}
	if s.unreadable {
		err = errors.Join(&imagegen.UnreadableTasksError{Tasks: []imagegen.UnreadableTask{{
			ID: "bad", Model: "scripted", Attempt: 1, Err: errors.New("request: invalid character"), Failed: true, Refund: 1,
		}}}, err)
	}
	return tasks, err
}

// The tasks a claim returns along with an *imagegen.PartialClaimError
// are claimed: the worker runs them and logs the error. Before, it took
// the claim as failed: it logged the error and dropped the tasks, leased
// to no one until their leases ran out (RunOnce: returned the error).
func TestWorkerRunsTheTasksOfAPartialClaim(t *testing.T) {
	for _, unreadable := range []bool{false, true} {
		name := map[bool]string{false: "RunOnce", true: "RunOnceWithAnUnreadableTask"}[unreadable]
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			var logs bytes.Buffer
			rec := &recorder{}
			f := newFixture(t, imagegentest.NewModel(1), logTo(&logs), func(c *imagegen.Config) {
				c.Store = partialClaims{Store: c.Store, unreadable: unreadable}
				c.Observer = rec
			})
			sub := f.submitFunded(t, "u")
			is.True(f.runOnce(t))
			is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusSuccess)
			is.True(strings.Contains(logs.String(), `"msg":"claim could not ask part of the store; the tasks it claimed elsewhere are run`))
			is.True(strings.Contains(logs.String(), `"part":"shard {imagegen:1.7}","err":"unexpected EOF","claimed":1`))
			is.True(slices.Contains(rec.list(), "claimed scripted 0s")) // counted as claimed
			is.Equal(strings.Contains(logs.String(), `"msg":"claimed task could not be read; failed and refunded","task_id":"bad"`), unreadable)
		})
	}
	t.Run("Run", func(t *testing.T) {
		is := is.New(t)
		var logs bytes.Buffer
		f := newFixture(t, imagegentest.NewModel(1), logTo(&logs), func(c *imagegen.Config) { c.Store = partialClaims{Store: c.Store} })
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
		is.True(strings.Contains(logs.String(), `"msg":"claim could not ask part of the store`))
	})
}

// oddClaims is a store whose claims that get tasks return them with an
// error the worker does not know.
type oddClaims struct{ imagegen.Store }

func (s oddClaims) ClaimTasks(ctx context.Context, p imagegen.ClaimParams) ([]*imagegen.Task, error) {
	tasks, err := s.Store.ClaimTasks(ctx, p)
	if err != nil {
		return tasks, err
	}
	return tasks, errors.New("odd store")
}

// Tasks a store returned with an error the worker does not know are
// claimed all the same: the worker runs them and logs the error, where
// it dropped them.
func TestWorkerRunsTheTasksAClaimReturnedWithAnyError(t *testing.T) {
	is := is.New(t)
	var logs bytes.Buffer
	f := newFixture(t, imagegentest.NewModel(1), logTo(&logs), func(c *imagegen.Config) { c.Store = oddClaims{c.Store} })
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusSuccess)
	is.True(strings.Contains(logs.String(), `"msg":"claim returned tasks with an error; the tasks are run","err":"odd store","claimed":1`))
}
