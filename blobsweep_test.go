package imagegen_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	blobmemory "github.com/imagegen/imagegen/blob/memory"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

// blobKeys lists the keys in the store's BlobStore.
func blobKeys(t *testing.T, s imagegen.Store) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	if err := s.Blobs().List(ctx, func(b imagegen.BlobInfo) error { keys[b.Key] = true; return nil }); err != nil {
		t.Fatalf("list blobs: %v", err)
	}
	return keys
}

func TestSweepDeletesOrphansAfterTheGraceAndExpiredImages(t *testing.T) {
	is := is.New(t)
	// A BlobStore of its own (not the memory store's default, which loses
	// bytes with their records): only the sweep removes anything.
	var store imagegen.Store
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) { // retention 1h, grace 10m (default)
		store = testenv.Memory(t, memory.Config{Clock: c.Clock, Retention: time.Hour, Blobs: blobmemory.New(blobmemory.Config{Clock: c.Clock})})
		c.Store = store
	})
	f.store = store
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	img := f.task(t, "u", sub.TaskID).Images[0]
	// A crashed worker's bytes: written, never recorded.
	is.NoErr(f.store.Blobs().Put(ctx, "orphan", bytes.NewReader([]byte("png")), 3, "image/png"))

	n, err := f.svc.SweepBlobs(ctx)
	is.NoErr(err)
	is.Equal(n, 0) // the orphan is within the grace: its record may be coming
	is.Equal(blobKeys(t, f.store), map[string]bool{img: true, "orphan": true})

	f.clock.Advance(10*time.Minute + time.Second)
	n, err = f.svc.SweepBlobs(ctx)
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(blobKeys(t, f.store), map[string]bool{img: true}) // the recorded image stays
	_, blob, err := f.svc.OpenImage(ctx, img)
	is.NoErr(err)
	is.NoErr(blob.Body.Close())

	f.clock.Advance(time.Hour) // past retention: the record is gone, so are the bytes
	n, err = f.svc.SweepBlobs(ctx)
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(len(blobKeys(t, f.store)), 0)
	_, _, err = f.svc.OpenImage(ctx, img)
	is.True(errors.Is(err, imagegen.ErrImageNotFound))
}

// recordFails is a store whose CompleteTask fails, as a crash or an
// outage between the bytes and the record would.
type recordFails struct {
	imagegen.Store
	err error
}

func (r recordFails) CompleteTask(context.Context, string, int, []imagegen.Image) error { return r.err }

func TestFailedRecordLeavesOnlyAnOrphanBlob(t *testing.T) {
	is := is.New(t)
	var store imagegen.Store
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
		store = recordFails{Store: c.Store, err: errors.New("connection refused")}
		c.Store = store
	})
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusProcessing) // no success without a record
	is.Equal(len(task.Images), 0)
	is.Equal(len(blobKeys(t, store)), 1) // the bytes were written first

	f.clock.Advance(11 * time.Minute)
	n, err := f.svc.SweepBlobs(ctx)
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(len(blobKeys(t, store)), 0)
}

func TestLostLeaseDeletesTheBytesAtOnce(t *testing.T) {
	is := is.New(t)
	var store imagegen.Store
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
		store = recordFails{Store: c.Store, err: imagegen.ErrLeaseLost}
		c.Store = store
	})
	f.funded(t, "u", 1)
	f.submit(t, "u")
	is.True(f.runOnce(t))
	is.Equal(len(blobKeys(t, store)), 0) // no record will ever point at them
}

// TestSweepRunsInTheWorkerLoop: Run sweeps the orphans every
// BlobSweepInterval: not before the first interval has passed, and at
// once when it has.
func TestSweepRunsInTheWorkerLoop(t *testing.T) {
	is := is.New(t)
	const every = 7 * time.Minute // unlike the fixture's other waits
	sweeps := newWaitsClock(every)
	f := newFixture(t, imagegentest.NewModel(1), sweeps.install, func(c *imagegen.Config) {
		c.BlobSweepInterval = every
		c.OrphanGrace = imagegen.MinOrphanGrace
	})
	is.NoErr(f.store.Blobs().Put(ctx, "orphan", bytes.NewReader([]byte("png")), 3, "image/png"))
	cancel, stopped := f.runInBackground()
	defer func() { cancel(); <-stopped }()
	sweeps.waited(t)                       // the sweep loop waits for its first interval
	is.Equal(len(blobKeys(t, f.store)), 1) // nothing swept yet
	f.clock.Advance(every)                 // past the orphan's grace too
	sweeps.waited(t)                       // it swept, and waits for the next interval
	is.Equal(len(blobKeys(t, f.store)), 0)
}

func TestOrphanGraceHasAFloor(t *testing.T) {
	_, err := imagegen.New(imagegen.Config{Store: newFixture(t, imagegentest.NewModel(1)).store, Model: imagegentest.NewModel(1), WorkerConfig: imagegen.WorkerConfig{OrphanGrace: time.Second}})
	if err == nil {
		t.Fatal("an OrphanGrace under MinOrphanGrace was accepted")
	}
}
