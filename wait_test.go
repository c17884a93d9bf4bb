package imagegen_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
)

// noWatch hides the store's TaskWatcher, so WaitTask has to poll.
type noWatch struct{ imagegen.Store }

// waitForNewTask submits a task of user u and calls WaitTask on it with
// timeout in the background; it returns once WaitTask waits, with a
// function that waits for WaitTask's answer and checks its error (on the
// test's goroutine).
func (f fixture) waitForNewTask(t *testing.T, timeout time.Duration) (result func() *imagegen.Task) {
	t.Helper()
	sub := f.submitFunded(t, "u")
	type answer struct {
		task *imagegen.Task
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		task, err := f.svc.WaitTask(ctx, "u", sub.TaskID, timeout)
		got <- answer{task, err}
	}()
	testenv.Eventually(t, 5*time.Second, "the wait begins", func() bool { return f.clock.Waiters() > 0 }) // it is waiting
	return func() *imagegen.Task {
		a := <-got
		is.New(t).NoErr(a.err)
		return a.task
	}
}

func TestWaitTaskReturnsWhenTheTaskFinishes(t *testing.T) {
	for name, hide := range map[string]bool{"watched": false, "polled": true} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
				if hide {
					c.Store = noWatch{c.Store}
				}
			})
			got := f.waitForNewTask(t, 30*time.Second)
			is.True(f.runOnce(t))
			if hide {
				f.clock.Advance(time.Second) // the poll comes round
			}
			task := got()
			is.Equal(task.Status, imagegen.StatusSuccess)
			is.True(f.clock.Now().Before(task.CreatedAt.Add(30 * time.Second))) // long before the timeout
		})
	}
}

func TestWaitTaskTimesOutWithTheCurrentState(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	got := f.waitForNewTask(t, 10*time.Second)
	f.clock.Advance(10 * time.Second)
	is.Equal(got().Status, imagegen.StatusPending)
}

func TestWaitTaskOfAFinishedOrForeignTask(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task, err := f.svc.WaitTask(ctx, "u", sub.TaskID, time.Minute) // no wait at all
	is.NoErr(err)
	is.Equal(task.Status, imagegen.StatusSuccess)
	_, err = f.svc.WaitTask(ctx, "mallory", sub.TaskID, time.Minute)
	is.True(errors.Is(err, imagegen.ErrTaskNotFound))
}
