package imagegen_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/groupcommit"
)

// success is one CompleteTask call.
type success struct {
	id      string
	attempt int
	images  []imagegen.Image
	seed    *int64
}

// groupCompletes is a store whose successes go through a group commit
// (internal/groupcommit, with its default Timeout), as the PostgreSQL and
// Redis stores' do, and whose every batch waits (on a row lock, say)
// until just before its deadline, then commits.
type groupCompletes struct {
	imagegen.Store
	batches groupcommit.Batcher[success, struct{}]
}

func newGroupCompletes(s imagegen.Store) *groupCompletes {
	g := &groupCompletes{Store: s}
	g.batches = groupcommit.Batcher[success, struct{}]{Run: g.run, MaxBatch: 64, MaxInFlight: 1}
	return g
}

func (g *groupCompletes) CompleteTask(ctx context.Context, id string, attempt int, images []imagegen.Image, seed *int64) error {
	_, err := g.batches.Do(ctx, success{id, attempt, images, seed})
	return err
}

func (g *groupCompletes) run(ctx context.Context, batch []*groupcommit.Call[success, struct{}]) {
	deadline, _ := ctx.Deadline()
	time.Sleep(time.Until(deadline) - time.Millisecond)
	for _, c := range batch {
		c.Err = g.Store.CompleteTask(ctx, c.Req.id, c.Req.attempt, c.Req.images, c.Req.seed)
	}
}

// A success that a store's group commit took just before the worker's
// deadline for recording it may commit up to the batch's own timeout
// later. Config.OrphanGrace, even at its shortest, outlasts that: a sweep
// as soon as the bytes are MinOrphanGrace old finds their record. It was
// the worker's deadline plus 5s (15s), shorter than the 20s a success
// may take, so the sweep deleted the bytes of an image whose record came
// a few seconds later.
func TestMinOrphanGraceOutlastsALateGroupCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		var store *groupCompletes
		f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
			c.Clock = imagegen.SystemClock{} // the bubble's: the batches' timeouts and the blobs' times agree
		}, onBlobs(t, nil), func(c *imagegen.Config) {
			store = newGroupCompletes(c.Store)
			c.Store, c.OrphanGrace = store, imagegen.MinOrphanGrace
		})
		// Another worker's success holds the one batch in flight until
		// just before this worker's deadline.
		f.submitFunded(t, "other")
		blocker, err := store.ClaimTask(ctx, time.Hour)
		is.NoErr(err)
		blocked := make(chan error, 1)
		go func() { blocked <- store.CompleteTask(ctx, blocker.ID, blocker.Attempt, nil, nil) }()
		defer time.Sleep(time.Second) // the group commit's flusher lingers, then ends
		synctest.Wait()

		sub := f.submitFunded(t, "u")
		ran := f.runOnceInBackground() // its bytes are put now
		swept := make(chan error, 1)
		go func() {
			time.Sleep(imagegen.MinOrphanGrace + time.Millisecond)
			_, err := f.svc.SweepBlobs(ctx)
			swept <- err
		}()
		is.NoErr(<-ran)
		is.NoErr(<-blocked)
		is.NoErr(<-swept)

		task := f.task(t, "u", sub.TaskID)
		is.Equal(task.Status, imagegen.StatusSuccess)
		img, blob, err := f.svc.OpenImage(ctx, task.Images[0])
		is.NoErr(err) // the success's bytes are there
		is.Equal(img.TaskID, task.ID)
		is.NoErr(blob.Body.Close())
	})
}
