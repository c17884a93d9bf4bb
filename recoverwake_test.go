package imagegen_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// recoverFails is a store whose RecoverExpired does its work and answers
// an error with it, as the Redis store does when a queue of another kind
// cannot take one task back: what it reports was done.
type recoverFails struct{ imagegen.Store }

func (s recoverFails) RecoverExpired(ctx context.Context, maxAttempts int) (imagegen.Recovery, error) {
	rec, err := s.Store.RecoverExpired(ctx, maxAttempts)
	if err == nil {
		err = errors.New("one task left for later")
	}
	return rec, err
}

// Tasks that the recovery loop requeued wake the idle workers even when
// the recovery also answered an error (it left another task for later):
// they are not left waiting for the workers' next poll.
func TestRecoveryWithAnErrorStillWakesTheWorkers(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
		c.Store = recoverFails{c.Store}
		c.PollInterval = 24 * time.Hour // no poll within the test
		c.Workers = 1
	})
	_, err := f.svc.Grant(ctx, "u", 1, uuid.NewString())
	is.NoErr(err)
	sub, err := f.svc.Submit(ctx, "u", textReq)
	is.NoErr(err)
	_, err = f.store.ClaimTask(ctx, lease) // a worker that dies
	is.NoErr(err)

	cancel, stopped := f.runInBackground()
	defer func() { cancel(); <-stopped }()
	for wait := time.Now().Add(3 * time.Second); f.clock.Waiters() < 4; { // the loops and the idle worker wait
		if time.Now().After(wait) {
			t.Fatalf("%d waiters on the clock, want the three loops' and the idle worker's", f.clock.Waiters())
		}
		time.Sleep(time.Millisecond)
	}
	f.clock.Advance(lease) // the lease ends; the recovery loop runs
	deadline := time.Now().Add(3 * time.Second)
	for f.task(t, "u", sub.TaskID).Status != imagegen.StatusSuccess {
		if time.Now().After(deadline) {
			t.Fatalf("the requeued task is %s, left for the next poll", f.task(t, "u", sub.TaskID).Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
