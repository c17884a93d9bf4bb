package imagegen_test

import (
	"context"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

// slowButHealthyPuts is a BlobStore whose every Put takes d of the
// bubble's clock, then stores the bytes.
type slowButHealthyPuts struct {
	imagegen.BlobStore
	d time.Duration
}

func (b slowButHealthyPuts) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	select {
	case <-time.After(b.d):
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.BlobStore.Put(ctx, key, r, size, contentType)
}

// fourImages returns four 1x1 PNGs.
func fourImages(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	img := imagegen.GeneratedImage{ContentType: "image/png", Data: imagegentest.TinyPNG()}
	return []imagegen.GeneratedImage{img, img, img, img}, nil
}

// Each image of a success gets its own Config.BlobTimeout: four Puts of
// 8s each (under the default 10s BlobTimeout) all succeed. They were
// made one after another under the record's single 10s deadline, so a
// slow-but-healthy BlobStore failed every attempt of a 4-image task.
func TestEachImageGetsItsBlobTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		f := newFixture(t, imagegentest.NewModel(1, fourImages),
			onBlobs(t, func(b imagegen.BlobStore) imagegen.BlobStore { return slowButHealthyPuts{b, 8 * time.Second} }))
		sub := f.submitFunded(t, "u")
		is.NoErr(<-f.runOnceInBackground())
		task := f.task(t, "u", sub.TaskID)
		is.Equal(task.LastError, "")
		is.Equal(task.Status, imagegen.StatusSuccess)
		is.Equal(len(task.Images), 4)
	})
}

// An OrphanGrace that a blob could outlive while it waits for its
// record under a long BlobTimeout is refused.
func TestOrphanGraceMustOutlastBlobTimeout(t *testing.T) {
	is := is.New(t)
	is.Equal(imagegen.OrphanGraceFor(imagegen.DefaultBlobTimeout), imagegen.MinOrphanGrace)
	is.Equal(imagegen.OrphanGraceFor(time.Second), imagegen.MinOrphanGrace)
	is.True(imagegen.OrphanGraceFor(time.Minute) > time.Minute)
	c := imagegen.Config{Store: testenv.Memory(t, memory.Config{}), Model: imagegentest.NewModel(1), BlobTimeout: time.Minute}
	c.OrphanGrace = imagegen.MinOrphanGrace
	_, err := imagegen.New(c)
	is.True(err != nil) // a blob could wait a minute and more for its record
	c.OrphanGrace = imagegen.OrphanGraceFor(time.Minute)
	_, err = imagegen.New(c)
	is.NoErr(err)
}
