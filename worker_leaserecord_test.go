package imagegen_test

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// slowPuts is a BlobStore whose Put waits until the test lets it go,
// as a slow BlobStore does while the worker stores a success's bytes.
type slowPuts struct {
	imagegen.BlobStore
	entered chan struct{} // closed by the first Put
	proceed chan struct{}
	once    sync.Once
	puts    atomic.Int32
}

func newSlowPuts() *slowPuts {
	return &slowPuts{entered: make(chan struct{}), proceed: make(chan struct{})}
}

func (b *slowPuts) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	b.puts.Add(1)
	b.once.Do(func() { close(b.entered) })
	select {
	case <-b.proceed:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.BlobStore.Put(ctx, key, r, size, contentType)
}

// The lease of a task whose generation has ended stays renewed while
// its outcome is stored: a BlobStore that takes longer than the lease
// to store the image bytes must not let Recover requeue the task
// (another worker would generate it again, a second provider charge,
// and the first worker's success would fail with ErrLeaseLost). Both
// ways of running a task are checked: RunOnce and Run's workers.
func TestLeaseIsRenewedWhileTheOutcomeIsStored(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(f fixture) (stop func() error)
	}{
		{"RunOnce", func(f fixture) func() error {
			done := f.runOnceInBackground()
			return func() error { return <-done }
		}},
		{"Run", func(f fixture) func() error {
			cancel, stopped := f.runInBackground()
			return func() error { cancel(); return <-stopped }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// In a bubble, synctest.Wait returns once every goroutine
			// is blocked for good: the renewer then waits on the clock.
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				blobs := newSlowPuts()
				f := newFixture(t, imagegentest.NewModel(1),
					onBlobs(t, func(b imagegen.BlobStore) imagegen.BlobStore { blobs.BlobStore = b; return blobs }),
					blobTimeout(time.Hour))
				sub := f.submitFunded(t, "u")
				stopRun := tc.run(f)
				proceed := sync.OnceFunc(func() { close(blobs.proceed) })
				stop := sync.OnceValue(func() error { proceed(); return stopRun() })
				defer stop() // also when an assertion fails: nothing stays blocked in the bubble

				<-blobs.entered // the generation is over; its bytes are being stored
				// Four lease periods pass in steps of a third.
				for range 12 {
					synctest.Wait()
					f.clock.Advance(lease / 3)
					synctest.Wait()
					task := f.task(t, "u", sub.TaskID)
					is.Equal(task.Attempt, 1)                     // never taken away
					is.True(task.LeaseUntil.After(f.clock.Now())) // renewed
					n, err := f.svc.Recover(ctx)
					is.NoErr(err)
					is.Equal(n, 0) // the lease is still held
				}
				proceed()
				synctest.Wait()
				is.NoErr(stop())

				task := f.task(t, "u", sub.TaskID)
				is.Equal(task.Status, imagegen.StatusSuccess) // the first worker's success is stored
				is.Equal(task.Attempt, 1)
				is.Equal(len(task.Images), 1)
				is.Equal(len(f.model.Calls()), 1)     // generated (and charged by the provider) once
				is.Equal(blobs.puts.Load(), int32(1)) // its bytes stored once
				is.Equal(f.balance(t, "u"), int64(0))
			})
		})
	}
}

// lostRenewals is a store whose lease renewals find the lease lost.
type lostRenewals struct{ imagegen.Store }

func (lostRenewals) RenewLease(context.Context, string, int, time.Duration) error {
	return imagegen.ErrLeaseLost
}

// withLostRenewals makes the fixture's store a lostRenewals.
func withLostRenewals(c *imagegen.Config) { c.Store = lostRenewals{c.Store} }

// A lease found lost while the model runs cancels the generation.
func TestLeaseLostDuringTheGenerationCancelsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		started := make(chan struct{})
		f := newFixture(t, imagegentest.NewModel(1, imagegentest.Block(started, make(chan struct{}))), withLostRenewals)
		f.submitFunded(t, "u")
		done := f.runOnceInBackground()
		<-started
		synctest.Wait()
		f.clock.Advance(lease / 3) // the renewal finds the lease lost
		is.NoErr(<-done)           // Block only returns when its context ends
		is.Equal(len(f.model.Calls()), 1)
	})
}

// A lease found lost while the outcome is stored cancels nothing: the
// store call that records the outcome reports a lost lease itself (here
// the lease is held, so the success is stored).
func TestLeaseLostWhileTheOutcomeIsStoredCancelsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		blobs := newSlowPuts()
		f := newFixture(t, imagegentest.NewModel(1),
			onBlobs(t, func(b imagegen.BlobStore) imagegen.BlobStore { blobs.BlobStore = b; return blobs }),
			withLostRenewals, blobTimeout(time.Hour))
		sub := f.submitFunded(t, "u")
		done := f.runOnceInBackground()
		<-blobs.entered
		synctest.Wait()
		f.clock.Advance(lease / 3) // the renewal finds the lease lost
		synctest.Wait()
		close(blobs.proceed) // the Put's context is still live
		is.NoErr(<-done)
		is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusSuccess)
	})
}
