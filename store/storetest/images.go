package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

// image returns the record of an image whose bytes would be its id; the
// store keeps records only, so nothing is put in its BlobStore.
func image(id string) imagegen.Image {
	sum := sha256.Sum256([]byte(id))
	return imagegen.Image{ID: id, ContentType: "image/png", Size: int64(len(id)), Checksum: hex.EncodeToString(sum[:])}
}

func testImageRecords(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	task, c := startTask(t, s, "u", 1)
	a, b := image(task.ID+"-a"), image(task.ID+"-b")
	a.Owner, b.Owner = "u", "u"
	b.ContentType = "image/webp"
	is.NoErr(s.CompleteTask(ctx, task.ID, c.Attempt, []imagegen.Image{a, b}, nil))
	done := get(t, s, "u", task.ID)
	for _, want := range []imagegen.Image{a, b} {
		got, err := s.Image(ctx, want.ID)
		is.NoErr(err)
		is.Equal(got.ID, want.ID)
		is.Equal(got.TaskID, task.ID)
		is.Equal(got.Owner, "u")
		is.Equal(got.ContentType, want.ContentType)
		is.Equal(got.Size, want.Size)
		is.Equal(got.Checksum, want.Checksum)
		is.True(got.CreatedAt.Equal(done.FinishedAt))
		is.True(got.ExpiresAt.Equal(done.ExpiresAt))
	}
	_, err := s.Image(ctx, task.ID+"-never")
	is.True(errors.Is(err, imagegen.ErrImageNotFound))

	// Every store has a working BlobStore for the bytes.
	blobs := s.Blobs()
	is.True(blobs != nil)
	is.NoErr(blobs.Put(ctx, a.ID, bytes.NewReader([]byte(a.ID)), a.Size, a.ContentType))
	t.Cleanup(func() { _ = blobs.Delete(ctx, a.ID) })
	blob, err := blobs.Open(ctx, a.ID)
	is.NoErr(err)
	data, err := io.ReadAll(blob.Body)
	is.NoErr(err)
	is.NoErr(blob.Body.Close())
	is.Equal(string(data), a.ID)
}

// testCompleteWithBytes: a store that is an imagegen.BytesCompleter keeps
// a success's records and bytes together, and neither when the attempt
// no longer holds the lease (a success sent at the same time still
// counts); one that declines (done false) has done nothing.
func testCompleteWithBytes(t *testing.T, h Harness) {
	bc, ok := h.Store.(imagegen.BytesCompleter)
	if !ok {
		t.Skip("the store is not an imagegen.BytesCompleter")
	}
	is := is.New(t)
	s := h.Store
	task1, c1 := startTask(t, s, "u", 1)
	task2, c2 := startTask(t, s, "u", 1)
	img := func(id string, n int) imagegen.Image {
		return imagegen.Image{ID: id, Owner: "u", ContentType: "image/png", Size: int64(n), Checksum: "x"}
	}
	lost := make(chan error, 1)
	go func() {
		_, err := bc.CompleteTaskWithBytes(ctx, task2.ID, c2.Attempt+1, []imagegen.Image{img(task2.ID+"-c", 3)}, [][]byte{[]byte("xyz")}, nil)
		lost <- err
	}()
	done, err := bc.CompleteTaskWithBytes(ctx, task1.ID, c1.Attempt, []imagegen.Image{img(task1.ID+"-a", 3), img(task1.ID+"-b", 0)},
		[][]byte{[]byte("abc"), {}}, nil)
	if !done {
		is.NoErr(err)
		is.Equal(get(t, s, "u", task1.ID).Status, imagegen.StatusProcessing) // nothing done
		<-lost
		return
	}
	is.NoErr(err)
	is.Equal(get(t, s, "u", task1.ID).Status, imagegen.StatusSuccess)
	for id, want := range map[string]string{task1.ID + "-a": "abc", task1.ID + "-b": ""} {
		_, err := s.Image(ctx, id)
		is.NoErr(err)
		b, err := s.Blobs().Open(ctx, id)
		is.NoErr(err)
		got, err := io.ReadAll(b.Body)
		_ = b.Body.Close()
		is.NoErr(err)
		is.Equal(string(got), want)
	}
	is.True(errors.Is(<-lost, imagegen.ErrLeaseLost))
	_, err = s.Blobs().Stat(ctx, task2.ID+"-c")
	is.True(errors.Is(err, imagegen.ErrBlobNotFound)) // its bytes are gone
	_, err = s.Image(ctx, task2.ID+"-c")
	is.True(errors.Is(err, imagegen.ErrImageNotFound))
	is.Equal(get(t, s, "u", task2.ID).Status, imagegen.StatusProcessing)
}
