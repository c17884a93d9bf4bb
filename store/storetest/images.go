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
