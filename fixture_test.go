package imagegen_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	blobmemory "github.com/imagegen/imagegen/blob/memory"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

// The fixture the package's tests share: a service on the memory store
// with a scripted model and a manual clock, and the steps of a task's
// life as one-line helpers.

var ctx = context.Background()

// quiet keeps the workers' logs out of test output.
var quiet = slog.New(slog.DiscardHandler)

const lease = 30 * time.Second

// fixture is a service with the parts a test drives or looks into.
type fixture struct {
	svc   *imagegen.Service
	store imagegen.Store
	clock *imagegentest.Clock
	model *imagegentest.Model
}

// newFixture makes a service on the memory store with model and a
// manual clock; each cfg changes its Config first (the fixture's store is
// the Config.Store they leave).
func newFixture(t *testing.T, model *imagegentest.Model, cfg ...func(*imagegen.Config)) fixture {
	t.Helper()
	clock := imagegentest.NewClock(time.Time{})
	store := testenv.Memory(t, memory.Config{Clock: clock, Retention: time.Hour})
	c := imagegen.Config{Store: store, Model: model, Clock: clock, Logger: quiet, WorkerConfig: imagegen.WorkerConfig{LeaseDuration: lease, MaxAttempts: 3, Workers: 2}}
	for _, f := range cfg {
		f(&c)
	}
	svc, err := imagegen.New(c)
	is.New(t).NoErr(err)
	return fixture{svc: svc, store: c.Store, clock: clock, model: model}
}

// onBlobs keeps the fixture's images in a BlobStore of their own: a
// memory one on the fixture's clock, as wrap makes it behave (nil: as it
// is), under a memory store like newFixture's. Only a sweep removes its
// bytes (the memory store's default BlobStore loses them with their
// records).
func onBlobs(t *testing.T, wrap func(imagegen.BlobStore) imagegen.BlobStore) func(*imagegen.Config) {
	return func(c *imagegen.Config) {
		var blobs imagegen.BlobStore = blobmemory.New(blobmemory.Config{Clock: c.Clock})
		if wrap != nil {
			blobs = wrap(blobs)
		}
		c.Store = testenv.Memory(t, memory.Config{Clock: c.Clock, Retention: time.Hour, Blobs: blobs})
	}
}

// blobTimeout sets Config.BlobTimeout.
func blobTimeout(d time.Duration) func(*imagegen.Config) {
	return func(c *imagegen.Config) {
		c.BlobTimeout = d
		// A long BlobTimeout needs a longer OrphanGrace than the default.
		if g := imagegen.OrphanGraceFor(d); g > 10*time.Minute {
			c.OrphanGrace = max(c.OrphanGrace, g)
		}
	}
}

// logTo makes the fixture's service log JSON into buf.
func logTo(buf *bytes.Buffer) func(*imagegen.Config) {
	return func(c *imagegen.Config) { c.Logger = slog.New(slog.NewJSONHandler(buf, nil)) }
}

// textReq is a valid text-to-image request.
var textReq = imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse"}

// The scripted model's failures: a busy provider (retried) and a
// refusal (final).
var (
	retryable = &imagegen.ModelError{Provider: "scripted", Retryable: true, Message: "provider busy", Err: errors.New("503")}
	refused   = &imagegen.ModelError{Provider: "scripted", Refused: true, Message: "nudity"}
)

func (f fixture) funded(t *testing.T, owner string, credits int64) {
	t.Helper()
	_, err := f.svc.Grant(ctx, owner, credits, uuid.NewString())
	is.New(t).NoErr(err)
}

func (f fixture) submit(t *testing.T, owner string) imagegen.Submission {
	t.Helper()
	sub, err := f.svc.Submit(ctx, owner, textReq)
	is.New(t).NoErr(err)
	return sub
}

// submitFunded grants owner the 1 credit a task costs, then submits it.
func (f fixture) submitFunded(t *testing.T, owner string) imagegen.Submission {
	t.Helper()
	f.funded(t, owner, 1)
	return f.submit(t, owner)
}

func (f fixture) runOnce(t *testing.T) bool {
	t.Helper()
	ran, err := f.svc.RunOnce(ctx)
	is.New(t).NoErr(err)
	return ran
}

// runOnceInBackground runs one task (RunOnce) on its own goroutine; done
// then receives RunOnce's error, for the test goroutine to check.
func (f fixture) runOnceInBackground() (done <-chan error) {
	ran := make(chan error, 1)
	go func() {
		_, err := f.svc.RunOnce(ctx)
		ran <- err
	}()
	return ran
}

// runInBackground starts the service's workers (Run) on their own;
// cancel stops them, and stopped then receives Run's result.
func (f fixture) runInBackground() (cancel context.CancelFunc, stopped <-chan error) {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.svc.Run(runCtx) }()
	return cancel, done
}

func (f fixture) task(t *testing.T, owner, id string) *imagegen.Task {
	t.Helper()
	task, err := f.svc.Task(ctx, owner, id)
	is.New(t).NoErr(err)
	return task
}

// succeeded reports whether every one of owner's tasks ids has
// succeeded.
func (f fixture) succeeded(t *testing.T, owner string, ids []string) bool {
	t.Helper()
	for _, id := range ids {
		if f.task(t, owner, id).Status != imagegen.StatusSuccess {
			return false
		}
	}
	return true
}

func (f fixture) balance(t *testing.T, owner string) int64 {
	t.Helper()
	b, err := f.svc.Balance(ctx, owner)
	is.New(t).NoErr(err)
	return b
}

// errOf is the error of a FailTask or CancelTask, whose refund the
// check at hand does not look at.
func errOf(_ int64, err error) error { return err }
