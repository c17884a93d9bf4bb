package imagegen_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/store/storekit"
)

// A provider's 429 with Retry-After pauses the model for every worker
// on the store: no task of it starts until the pause ends, and the task
// itself waits at least that long.
func TestRetryAfterPausesTheModel(t *testing.T) {
	is := is.New(t)
	busy := &imagegen.ModelError{Provider: "test", Retryable: true, Message: "rate limited", RetryAfter: 20 * time.Second}
	f := newFixture(t, imagegentest.NewModel(1, imagegentest.Fail(busy)))
	first := f.submitFunded(t, "alice")
	second := f.submitFunded(t, "bob")
	is.True(f.runOnce(t)) // alice's, told 429
	retried := f.task(t, "alice", first.TaskID)
	is.Equal(retried.Status, imagegen.StatusPending)
	is.True(retried.RunAfter.Sub(retried.UpdatedAt) >= 20*time.Second) // its retry waits out the Retry-After too
	st, err := f.store.SchedulerStats(ctx, imagegen.Limits{})
	is.NoErr(err)
	is.Equal(len(st.Paused), 1)
	is.True(!f.runOnce(t)) // bob's may not start: the model is paused for everyone
	is.Equal(f.task(t, "bob", second.TaskID).Status, imagegen.StatusPending)
	f.clock.Advance(20 * time.Second)
	is.True(f.runOnce(t)) // the pause is over
}

// A Retry-After of days (the header reads up to years) pauses the model
// and delays the task for MaxModelPause only: one bad answer must not
// stop a model for every worker until an operator edits the store.
func TestRetryAfterIsBounded(t *testing.T) {
	is := is.New(t)
	busy := &imagegen.ModelError{Provider: "test", Retryable: true, Message: "rate limited", RetryAfter: 1000 * time.Hour}
	f := newFixture(t, imagegentest.NewModel(1, imagegentest.Fail(busy)))
	first := f.submitFunded(t, "alice")
	is.True(f.runOnce(t)) // told 429, Retry-After 1000h
	retried := f.task(t, "alice", first.TaskID)
	is.Equal(retried.Status, imagegen.StatusPending)
	is.True(retried.RunAfter.Sub(retried.UpdatedAt) <= imagegen.MaxModelPause) // the task's retry
	st, err := f.store.SchedulerStats(ctx, imagegen.Limits{})
	is.NoErr(err)
	for _, until := range st.Paused {
		is.True(!until.After(f.clock.Now().Add(imagegen.MaxModelPause))) // the model's pause
	}
	f.clock.Advance(imagegen.MaxModelPause)
	is.True(f.runOnce(t)) // the model runs again
}

// -max-pending: the owner's next submit is refused, nothing charged;
// another owner's goes through.
func TestMaxPendingRefusesAndChargesNothing(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) { c.MaxPending = 2 })
	f.funded(t, "alice", 5)
	f.submit(t, "alice")
	f.submit(t, "alice")
	_, err := f.svc.Submit(ctx, "alice", textReq)
	is.True(errors.Is(err, imagegen.ErrQueueFull))
	is.Equal(f.balance(t, "alice"), int64(3))
	f.funded(t, "bob", 1)
	f.submit(t, "bob")
}

func TestLimitsAreValidated(t *testing.T) {
	for name, l := range map[string]imagegen.Limits{
		"negative owner cap": {OwnerConcurrency: -1},
		"negative model cap": {ModelConcurrency: map[string]int{"m": -1}},
		"model without name": {ModelRate: map[string]int{"": 3}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := imagegen.New(imagegen.Config{Store: newFixture(t, imagegentest.NewModel(1)).store, Model: imagegentest.NewModel(1), WorkerConfig: imagegen.WorkerConfig{Limits: l}})
			is.New(t).True(err != nil)
		})
	}
}

// The weight an operator sets is the store's, for every process.
func TestSetOwnerWeight(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	is.NoErr(f.svc.SetOwnerWeight(ctx, "alice", 4))
	w, err := f.svc.OwnerWeight(ctx, "alice")
	is.NoErr(err)
	is.Equal(w, 4)
	is.True(errors.Is(f.svc.SetOwnerWeight(ctx, "alice", 0), storekit.ErrInvalidStoreInput))
}

// A pending task's estimated start is its place in the queue at the
// rate tasks started in the last minutes; with no recent start there is
// none.
func TestEstimatedStarts(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	none := f.svc.EstimatedStarts(ctx, []int{0, -1})
	is.True(none[0].IsZero() && none[1].IsZero())
	is.NoErr(f.store.AddProviderStats(ctx, imagegen.ProviderStats{Requests: []imagegen.ProviderCount{{Provider: "p", Outcome: "success", N: 60}}}))
	got := f.svc.EstimatedStarts(ctx, []int{0, 9, -1})
	now := f.clock.Now()
	is.Equal(got[0].Sub(now), 5*time.Second) // 60 starts in the 5-minute window: one every 5 s
	is.Equal(got[1].Sub(now), 50*time.Second)
	is.True(got[2].IsZero())
}
