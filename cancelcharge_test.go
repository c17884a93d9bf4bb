package imagegen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
)

// startRunning submits a task of owner's (funded with its 1 credit) and
// runs it on a goroutine of its own until the model blocks in it: the
// task is processing. done receives RunOnce's error once the generation
// ends (Block returns when its context ends: a cancel).
func startRunning(t *testing.T, f fixture, owner string) (id string, done <-chan error) {
	t.Helper()
	started := make(chan struct{})
	f.model.Then(imagegentest.Block(started, make(chan struct{})))
	sub := f.submitFunded(t, owner)
	done = f.runOnceInBackground()
	<-started
	return sub.TaskID, done
}

// isCancelledAndRefunded checks that u's task id, which startRunning
// ran on u's one credit, ended cancelled and gave that credit back.
func isCancelledAndRefunded(t *testing.T, f fixture, id string) {
	t.Helper()
	is := is.New(t)
	task := f.task(t, "u", id)
	is.Equal(task.ErrorCode, imagegen.CodeCancelled)
	is.True(task.Refunded)
	is.Equal(f.balance(t, "u"), int64(1)) // refunded
}

// An operator's cancel is the service's choice, not the owner's: a
// running task is refunded in full, and its generation stopped.
func TestOperatorCancelOfARunningTaskRefunds(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	id, done := startRunning(t, f, "u")
	is.Equal(f.balance(t, "u"), int64(0)) // charged
	is.NoErr(f.svc.Inspector().Cancel(ctx, id, "the provider bills us twice for it"))
	is.NoErr(<-done)
	isCancelledAndRefunded(t, f, id)
}

// The owner's cancel counts and logs what it did: a running task's kept
// charge is no refund (no CreditsRefunded, "refunded":0 in its line), a
// pending task's refund is.
func TestOwnerCancelCountsAndLogsWhatItRefunded(t *testing.T) {
	is := is.New(t)
	rec := &recorder{}
	var logs bytes.Buffer
	f := newFixture(t, imagegentest.NewModel(1), logTo(&logs), func(c *imagegen.Config) { c.Observer = rec })
	running, done := startRunning(t, f, "u")
	pending := f.submitFunded(t, "u").TaskID
	is.NoErr(f.svc.Cancel(ctx, "u", running))
	is.NoErr(<-done)
	is.NoErr(f.svc.Cancel(ctx, "u", pending))
	is.Equal(f.balance(t, "u"), int64(1)) // the pending task's credit back, the running one's kept

	var finished, refunds []string
	for _, e := range rec.list() {
		switch e {
		case `finished scripted failed "cancelled"`:
			finished = append(finished, e)
		case "refunded 1":
			refunds = append(refunds, e)
		}
	}
	is.Equal(len(finished), 2)
	is.Equal(refunds, []string{"refunded 1"}) // the pending task's only
	is.Equal(cancelLines(t, &logs), map[string]float64{running: 0, pending: 1})
}

// cancelLines reads the "task cancelled" lines of a JSON log: what each
// task's cancel refunded, by task id.
func cancelLines(t *testing.T, logs *bytes.Buffer) map[string]float64 {
	t.Helper()
	refunded := map[string]float64{}
	for line := range bytes.Lines(logs.Bytes()) {
		var l map[string]any
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if l["msg"] == "task cancelled" {
			refunded[l["task_id"].(string)] = l["refunded"].(float64)
		}
	}
	return refunded
}

// notLandedYet is a store whose first misses cancels find no task, as
// when a submit's write lands after the cancel of its lost answer.
type notLandedYet struct {
	imagegen.Store
	misses atomic.Int64
}

func (s *notLandedYet) CancelTask(ctx context.Context, owner, id string, p imagegen.CancelParams) (int64, error) {
	if s.misses.Add(-1) >= 0 {
		return 0, imagegen.ErrTaskNotFound
	}
	return s.Store.CancelTask(ctx, owner, id, p)
}

// A lost submit's task is cancelled because the server lost its answer:
// its caller never had the task, so a late cancel that finds it running
// (it landed, and a worker took it) refunds it in full.
func TestLateCancelOfALostSubmitRefundsARunningTask(t *testing.T) {
	is := is.New(t)
	store := &notLandedYet{}
	store.misses.Store(1)
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
		store.Store = c.Store
		c.Store = store
	})
	id, done := startRunning(t, f, "u")
	waiters := f.clock.Waiters()
	f.svc.CancelLostSubmit(ctx, "u", &imagegen.SubmitUnknownError{TaskID: id, Err: fmt.Errorf("no reply: %w", imagegen.ErrOutcomeUnknown)})
	testenv.Eventually(t, 5*time.Second, "the late cancel to wait on the clock", func() bool { return f.clock.Waiters() > waiters })
	is.Equal(f.task(t, "u", id).Status, imagegen.StatusProcessing) // the first cancel found nothing
	f.clock.Advance(time.Second)
	is.NoErr(<-done) // the late cancel stopped the generation
	isCancelledAndRefunded(t, f, id)
}

// A task whose owner's cancel kept its started charge was never
// refunded: an operator's retry with a recharge would charge it a
// second time, and is refused; a free retry runs it.
func TestRechargeOfATaskThatKeptItsChargeIsRefused(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	id, done := startRunning(t, f, "u")
	is.NoErr(f.svc.Cancel(ctx, "u", id)) // kept its charge
	is.NoErr(<-done)
	_, err := f.svc.Grant(ctx, "u", 1, "second credit")
	is.NoErr(err)

	err = f.svc.Inspector().Retry(ctx, id, true, "the provider's outage is over")
	is.True(errors.Is(err, imagegen.ErrDuplicateEntry)) // would charge it twice
	is.Equal(f.balance(t, "u"), int64(1))               // not charged again
	is.Equal(f.task(t, "u", id).Status, imagegen.StatusFailed)

	is.NoErr(f.svc.Inspector().Retry(ctx, id, false, "on the house"))
	is.Equal(f.task(t, "u", id).Status, imagegen.StatusPending)
	is.Equal(f.balance(t, "u"), int64(1))
}
