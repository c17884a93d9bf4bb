package imagegen_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// oneStep is a Store that completes with the bytes in one step (a
// BytesCompleter), or declines when decline is set; it counts the calls.
type oneStep struct {
	imagegen.Store
	decline bool
	calls   int
}

func (s *oneStep) CompleteTaskWithBytes(ctx context.Context, id string, attempt int, images []imagegen.Image, data [][]byte, seed *int64) (bool, error) {
	s.calls++
	if s.decline {
		return false, nil
	}
	for i, img := range images {
		if err := s.Blobs().Put(ctx, img.ID, bytes.NewReader(data[i]), img.Size, img.ContentType); err != nil {
			return true, err
		}
	}
	return true, s.CompleteTask(ctx, id, attempt, images, seed)
}

// A BytesCompleter store gets the success and its bytes in one call
// instead of the Service's Puts and CompleteTask; one that declines gets
// them the usual way. Either way the image is there.
func TestSuccessThroughBytesCompleter(t *testing.T) {
	for _, decline := range []bool{false, true} {
		is := is.New(t)
		var store *oneStep
		f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
			store = &oneStep{Store: c.Store, decline: decline}
			c.Store = store
		})
		sub := f.submitFunded(t, "alice")
		ran, err := f.svc.RunOnce(ctx)
		is.NoErr(err)
		is.True(ran)
		is.Equal(store.calls, 1)
		task, err := f.svc.Task(ctx, "alice", sub.TaskID)
		is.NoErr(err)
		is.Equal(task.Status, imagegen.StatusSuccess)
		is.Equal(len(task.Images), 1)
		img, err := f.svc.Image(ctx, task.Images[0])
		is.NoErr(err)
		blob, err := f.store.Blobs().Open(ctx, img.ID)
		is.NoErr(err)
		b, err := io.ReadAll(blob.Body)
		is.NoErr(err)
		_ = blob.Body.Close()
		is.Equal(int64(len(b)), img.Size)
	}
}
