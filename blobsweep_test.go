package imagegen_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
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
	// A BlobStore of its own: only the sweep removes anything.
	f := newFixture(t, imagegentest.NewModel(1), onBlobs(t, nil)) // retention 1h, grace 10m (default)
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

func (r recordFails) CompleteTask(context.Context, string, int, []imagegen.Image, *int64) error {
	return r.err
}

// failingRecords makes the fixture's store a recordFails with err.
func failingRecords(err error) func(*imagegen.Config) {
	return func(c *imagegen.Config) { c.Store = recordFails{Store: c.Store, err: err} }
}

func TestFailedRecordLeavesOnlyAnOrphanBlob(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1), failingRecords(errors.New("connection refused")))
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusProcessing) // no success without a record
	is.Equal(len(task.Images), 0)
	is.Equal(len(blobKeys(t, f.store)), 1) // the bytes were written first

	f.clock.Advance(11 * time.Minute)
	n, err := f.svc.SweepBlobs(ctx)
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(len(blobKeys(t, f.store)), 0)
}

func TestLostLeaseDeletesTheBytesAtOnce(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1), failingRecords(imagegen.ErrLeaseLost))
	f.funded(t, "u", 1)
	f.submit(t, "u")
	is.True(f.runOnce(t))
	is.Equal(len(blobKeys(t, f.store)), 0) // no record will ever point at them
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
