package imagegen_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
)

func TestRunOnceSuccess(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	is.True(!f.runOnce(t)) // queue empty

	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusSuccess)
	is.Equal(len(task.Images), 1)
	img, blob, err := f.svc.OpenImage(ctx, task.Images[0])
	is.NoErr(err)
	defer blob.Body.Close()
	is.Equal(img.ContentType, "image/png")
	is.Equal(img.Owner, "u")
	is.Equal(img.TaskID, sub.TaskID)
	is.Equal(img.Size, int64(len(imagegentest.TinyPNG())))
	sum := sha256.Sum256(imagegentest.TinyPNG())
	is.Equal(img.Checksum, hex.EncodeToString(sum[:]))
	data, err := io.ReadAll(blob.Body)
	is.NoErr(err)
	is.Equal(data, imagegentest.TinyPNG())
	calls := f.model.Calls()
	is.Equal(len(calls), 1)
	is.Equal(calls[0].TaskID, sub.TaskID)
	is.Equal(calls[0].Request.Prompt, textReq.Prompt)
	is.Equal(calls[0].Attempt, 1)
	is.Equal(f.balance(t, "u"), int64(0)) // success keeps the charge
}

func TestRetryableErrorIsRetriedWithBackoff(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1, imagegentest.Fail(retryable)),
		func(c *imagegen.Config) { c.RetryBackoff = 10 * time.Second })
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusPending) // back in the queue
	is.True(strings.Contains(task.LastError, "503"))
	is.True(!f.runOnce(t)) // not before the backoff
	f.clock.Advance(10 * time.Second)
	is.True(f.runOnce(t))
	task = f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusSuccess)
	is.Equal(task.Attempt, 2)
	is.Equal(f.balance(t, "u"), int64(0)) // charged once
}

func TestRetriesEndInFailureAndOneRefund(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(2,
		imagegentest.Fail(retryable), imagegentest.Fail(retryable), imagegentest.Fail(retryable)))
	f.funded(t, "u", 2)
	sub := f.submit(t, "u")
	for i := 0; i < 3; i++ {
		f.clock.Advance(time.Hour) // past any backoff
		is.True(f.runOnce(t))
	}
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.True(strings.Contains(task.Error, "provider busy"))
	is.True(!strings.Contains(task.Error, "503")) // provider internals stay out of the user's message
	is.Equal(task.ErrorCode, imagegen.CodeProviderError)
	is.Equal(len(f.model.Calls()), 3)
	is.Equal(f.balance(t, "u"), int64(2)) // refunded
	ledger, err := f.svc.Ledger(ctx, "u")
	is.NoErr(err)
	is.Equal(len(ledger), 3) // grant, charge, one refund
}

func TestRefusalIsNotRetried(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1, imagegentest.Fail(refused)))
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(task.Error, "refused by content policy: nudity")
	is.Equal(task.ErrorCode, imagegen.CodeContentPolicy)
	is.Equal(len(f.model.Calls()), 1)
	is.Equal(f.balance(t, "u"), int64(1))
}

func TestPlainErrorIsRetried(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1, imagegentest.Fail(errors.New("boom"))))
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusPending)
}

func TestNoImagesIsAFailure(t *testing.T) {
	is := is.New(t)
	empty := func(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) { return nil, nil }
	f := newFixture(t, imagegentest.NewModel(1, empty, empty, empty))
	sub := f.submitFunded(t, "u")
	for i := 0; i < 3; i++ {
		f.clock.Advance(time.Hour)
		is.True(f.runOnce(t))
	}
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(f.balance(t, "u"), int64(1))
}

func TestExpiredLeaseGoesBackToPendingThenFails(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	sub := f.submitFunded(t, "u")
	// Three workers claim the task and die.
	for attempt := 1; attempt <= 3; attempt++ {
		claimed, err := f.store.ClaimTask(ctx, lease)
		is.NoErr(err)
		is.Equal(claimed.Attempt, attempt)
		n, err := f.svc.Recover(ctx)
		is.NoErr(err)
		is.Equal(n, 0) // the lease is still valid
		f.clock.Advance(lease)
		n, err = f.svc.Recover(ctx)
		is.NoErr(err)
		is.Equal(n, 1)
		want := imagegen.StatusPending
		if attempt == 3 {
			want = imagegen.StatusFailed
		}
		is.Equal(f.task(t, "u", sub.TaskID).Status, want)
	}
	is.Equal(f.balance(t, "u"), int64(1)) // refunded once
	is.True(!f.runOnce(t))
}

func TestExpiredLeaseIsFinishedByAnotherWorker(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	sub := f.submitFunded(t, "u")
	dead, err := f.store.ClaimTask(ctx, lease)
	is.NoErr(err)
	f.clock.Advance(lease)
	_, err = f.svc.Recover(ctx)
	is.NoErr(err)
	is.True(f.runOnce(t))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusSuccess)
	is.Equal(task.Attempt, 2)
	// The dead worker wakes up late: it can change nothing.
	is.True(errors.Is(errOf(f.store.FailTask(ctx, sub.TaskID, dead.Attempt, imagegen.Failure{Code: imagegen.CodeInternal, Message: "late"})), imagegen.ErrLeaseLost))
	is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusSuccess)
	is.Equal(f.balance(t, "u"), int64(0))
}

func TestLeaseIsRenewedWhileTheModelRuns(t *testing.T) {
	is := is.New(t)
	started, release := make(chan struct{}), make(chan struct{})
	f := newFixture(t, imagegentest.NewModel(1, imagegentest.Block(started, release)))
	sub := f.submitFunded(t, "u")
	done := f.runOnceInBackground()
	<-started
	// Four lease periods pass in steps of a third; the renewer keeps up.
	for i := 0; i < 12; i++ {
		testenv.Eventually(t, 5*time.Second, "the renewer waits", func() bool { return f.clock.Waiters() > 0 })
		f.clock.Advance(lease / 3)
		testenv.Eventually(t, 5*time.Second, "the lease is renewed", func() bool {
			task := f.task(t, "u", sub.TaskID)
			return task.LeaseUntil.After(f.clock.Now())
		})
		n, err := f.svc.Recover(ctx)
		is.NoErr(err)
		is.Equal(n, 0) // never taken away
	}
	close(release)
	is.NoErr(<-done)
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusSuccess)
	is.Equal(task.Attempt, 1)
}

func TestGenerationTimeout(t *testing.T) {
	is := is.New(t)
	never := make(chan struct{})
	f := newFixture(t, imagegentest.NewModel(1, imagegentest.Block(nil, never)),
		func(c *imagegen.Config) { c.GenerateTimeout = 5 * time.Millisecond; c.MaxAttempts = 1 })
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.True(strings.Contains(task.Error, "timed out"))
	is.Equal(task.ErrorCode, imagegen.CodeTimeout)
	is.Equal(f.balance(t, "u"), int64(1))
}

func TestRunProcessesConcurrentlyAndStops(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	f.funded(t, "u", 20)
	var ids []string
	for i := 0; i < 20; i++ {
		ids = append(ids, f.submit(t, "u").TaskID)
	}
	cancel, stopped := f.runInBackground()
	testenv.Eventually(t, 5*time.Second, "every task succeeds", func() bool { return f.succeeded(t, "u", ids) })
	cancel()
	is.NoErr(<-stopped)
	is.Equal(len(f.model.Calls()), 20) // each task ran once
}

func TestRunBoundsConcurrency(t *testing.T) {
	is := is.New(t)
	var mu sync.Mutex
	running, peak := 0, 0
	release := make(chan struct{})
	step := func(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		return imagegentest.Succeed()(ctx, g)
	}
	f := newFixture(t, imagegentest.NewModel(1, step, step, step, step, step))
	f.funded(t, "u", 5)
	for i := 0; i < 5; i++ {
		f.submit(t, "u")
	}
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan error)
	go func() { stopped <- f.svc.Run(runCtx) }()
	testenv.Eventually(t, 5*time.Second, "two generations run", func() bool { mu.Lock(); defer mu.Unlock(); return running == 2 })
	close(release)
	testenv.Eventually(t, 5*time.Second, "five model calls", func() bool { return len(f.model.Calls()) == 5 })
	cancel()
	is.NoErr(<-stopped)
	is.Equal(peak, 2) // Config.Workers
}

func TestShutdownReleasesRunningTasks(t *testing.T) {
	// In a bubble, synctest.Wait returns once every goroutine is blocked
	// for good: the clock moves a third of the lease at a time, and the
	// renewer renews at each step as it does in real time while Run waits
	// (a minute's jump at once would end the lease before any renewal,
	// and the store refuses to renew an ended lease).
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		started := make(chan struct{})
		f := newFixture(t, imagegentest.NewModel(1, imagegentest.Block(started, make(chan struct{}))),
			func(c *imagegen.Config) { c.ShutdownTimeout = time.Minute })
		sub := f.submitFunded(t, "u")
		runCtx, cancel := context.WithCancel(ctx)
		stopped := make(chan error, 1)
		go func() { stopped <- f.svc.Run(runCtx) }()
		<-started
		cancel()
		// Run waits for the generation up to ShutdownTimeout, then gives up on it.
		for elapsed := time.Duration(0); elapsed < time.Minute; elapsed += lease / 3 {
			synctest.Wait()
			select {
			case <-stopped:
				t.Fatalf("Run returned %v into the shutdown timeout of a minute", elapsed)
			default:
			}
			f.clock.Advance(lease / 3)
		}
		is.NoErr(<-stopped)
		task := f.task(t, "u", sub.TaskID)
		is.Equal(task.Status, imagegen.StatusPending) // released for another worker
		is.Equal(f.balance(t, "u"), int64(0))         // still paid for: it will run
	})
}

func TestUnusableReferenceImageFailsAtOnce(t *testing.T) {
	is := is.New(t)
	bad := &imagegen.ModelError{Provider: "scripted", InvalidInput: true, Message: "image_input[0] could not be used: not a supported image"}
	f := newFixture(t, imagegentest.NewModel(1, imagegentest.Fail(bad)))
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(task.ErrorCode, imagegen.CodeInvalidImageInput)
	is.Equal(task.Error, bad.Message)
	is.Equal(f.balance(t, "u"), int64(1))
}

// The owner's cancel of a running task stops its generation, and keeps
// its charge: the generation had begun, and a provider may bill for it
// (a cancel was a way to have a provider's call for nothing).
func TestCancelStopsARunningGeneration(t *testing.T) {
	is := is.New(t)
	started, never := make(chan struct{}), make(chan struct{})
	f := newFixture(t, imagegentest.NewModel(1, imagegentest.Block(started, never)))
	sub := f.submitFunded(t, "u")
	done := f.runOnceInBackground()
	<-started
	is.NoErr(f.svc.Cancel(ctx, "u", sub.TaskID))
	is.NoErr(<-done) // the generation was stopped: Block only returns when its context ends
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(task.ErrorCode, imagegen.CodeCancelled)
	is.Equal(task.Error, "cancelled")
	is.Equal(f.balance(t, "u"), int64(0)) // the owner's cancel keeps a started generation's charge
	is.True(!task.Refunded)
	is.True(errors.Is(f.svc.Cancel(ctx, "u", sub.TaskID), imagegen.ErrInvalidTransition))
}

// TestModelMessagesAreStoredAsText: a model's error text holding NUL or
// bytes that are not UTF-8 (a provider's answer may carry them) is kept
// without NUL and with U+FFFD for the bad bytes, as the last error of a
// retry and as the failure the user reads: PostgreSQL refused it, which
// lost the write.
func TestModelMessagesAreStoredAsText(t *testing.T) {
	is := is.New(t)
	retried := &imagegen.ModelError{Provider: "scripted", Retryable: true, Message: "busy", Err: errors.New("a\x00b\xffc")}
	f := newFixture(t, imagegentest.NewModel(1, imagegentest.Fail(retried)))
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusPending)
	is.True(strings.HasSuffix(task.LastError, "ab\uFFFDc")) // the retry's last error

	bad := &imagegen.ModelError{Provider: "scripted", InvalidInput: true, Message: "image_input[0]\x00 is \xff"}
	f = newFixture(t, imagegentest.NewModel(1, imagegentest.Fail(bad)))
	sub = f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task = f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(task.Error, "image_input[0] is \uFFFD")
}
