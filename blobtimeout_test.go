package imagegen_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// stallingBlobs is a BlobStore whose reads take stall each (ReadRange,
// then every Read of its body), and whose List stalls after its first
// blob, each wait ending early when the context does, as a network
// store's does.
type stallingBlobs struct {
	imagegen.BlobStore
	openStall, readStall, listStall time.Duration
}

// around is s stalling the reads of inner.
func (s stallingBlobs) around(inner imagegen.BlobStore) imagegen.BlobStore {
	s.BlobStore = inner
	return s
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s stallingBlobs) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := sleepCtx(ctx, s.openStall); err != nil {
		return nil, err
	}
	rd, err := imagegen.ReadBlobRange(ctx, s.BlobStore, key, off, n)
	if err != nil {
		return nil, err
	}
	return stallingBody{ReadCloser: rd, ctx: ctx, stall: s.readStall}, nil
}

func (s stallingBlobs) List(ctx context.Context, fn func(imagegen.BlobInfo) error) error {
	first := true
	return s.BlobStore.List(ctx, func(b imagegen.BlobInfo) error {
		if !first {
			if err := sleepCtx(ctx, s.listStall); err != nil {
				return err
			}
		}
		first = false
		return fn(b)
	})
}

type stallingBody struct {
	io.ReadCloser
	ctx   context.Context
	stall time.Duration
}

func (b stallingBody) Read(p []byte) (int, error) {
	if err := sleepCtx(b.ctx, b.stall); err != nil {
		return 0, err
	}
	return b.ReadCloser.Read(p[:min(len(p), 4)]) // four bytes a read
}

// stalledService stores one 100-byte image through a service whose
// BlobStore stalls as s says, with a BlobTimeout of 300ms.
func stalledService(t *testing.T, s stallingBlobs) (*imagegen.Service, *imagegen.Image) {
	t.Helper()
	is := is.New(t)
	data := make([]byte, 100)
	model := imagegentest.NewModel(1, func(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		return []imagegen.GeneratedImage{{ContentType: "image/png", Data: data}}, nil
	})
	f := newFixture(t, model, onBlobs(t, s.around), blobTimeout(300*time.Millisecond))
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusSuccess)
	img, err := f.svc.Image(ctx, task.Images[0])
	is.NoErr(err)
	return f.svc, img
}

func TestBlobReadsHaveADeadline(t *testing.T) {
	is := is.New(t)

	// A store that does not answer the read at all.
	svc, img := stalledService(t, stallingBlobs{openStall: time.Hour})
	start := time.Now()
	_, err := svc.ReadImage(ctx, img, 0, img.Size)
	is.True(errors.Is(err, imagegen.ErrBlobTimeout))
	is.True(time.Since(start) < 5*time.Second)

	// One that answers, then stalls in the middle of the bytes.
	svc, img = stalledService(t, stallingBlobs{readStall: time.Hour})
	rd, err := svc.ReadImage(ctx, img, 0, img.Size)
	is.NoErr(err)
	_, err = io.ReadAll(rd)
	is.True(errors.Is(err, imagegen.ErrBlobTimeout))
	is.NoErr(rd.Close())

	// A slow read whose every step answers in time is not cut short:
	// the deadline is per call, not for the whole download.
	svc, img = stalledService(t, stallingBlobs{readStall: 20 * time.Millisecond})
	start = time.Now()
	rd, err = svc.ReadImage(ctx, img, 0, img.Size)
	is.NoErr(err)
	got, err := io.ReadAll(rd) // 25 reads of 20ms
	is.NoErr(err)
	is.Equal(len(got), 100)
	is.True(time.Since(start) > 300*time.Millisecond) // longer than one deadline in all
}

func TestBlobListHasADeadlinePerBlob(t *testing.T) {
	is := is.New(t)
	for _, c := range []struct {
		stall   time.Duration
		timeout bool
	}{
		{time.Hour, true},              // stops answering after the first blob
		{20 * time.Millisecond, false}, // 30 blobs 20ms apart: twice the deadline in all, each in time
	} {
		f := newFixture(t, imagegentest.NewModel(1), onBlobs(t, stallingBlobs{listStall: c.stall}.around), blobTimeout(300*time.Millisecond))
		for i := range 30 {
			is.NoErr(f.store.Blobs().Put(ctx, "blob-"+strconv.Itoa(i), bytes.NewReader([]byte("x")), 1, "image/png"))
		}
		start := time.Now()
		_, err := f.svc.SweepBlobs(ctx) // the blobs are new: none is deleted
		is.Equal(errors.Is(err, imagegen.ErrBlobTimeout), c.timeout)
		is.True(time.Since(start) < 5*time.Second)
	}
}

// A store call cut short by the caller's own deadline is a timeout of
// the store too (the worker's deadline for recording an outcome may end
// an image write before Config.BlobTimeout does); one the caller
// cancelled is not.
func TestBlobCallCutByTheCallersDeadline(t *testing.T) {
	is := is.New(t)
	svc, img := stalledService(t, stallingBlobs{openStall: time.Hour})
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := svc.ReadImage(short, img, 0, img.Size)
	is.True(errors.Is(err, imagegen.ErrBlobTimeout))

	gone, cancel := context.WithCancel(ctx)
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = svc.ReadImage(gone, img, 0, img.Size)
	is.True(err != nil)
	is.True(!errors.Is(err, imagegen.ErrBlobTimeout)) // the caller went away
}
