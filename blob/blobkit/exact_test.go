package blobkit_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobkit"
)

// Append fills the room it is given and no more: a blob read into a
// slice sized for it stays that size (a bytes.Buffer would have doubled
// it), and a body of the wrong length is refused.
func TestAppend(t *testing.T) {
	is := is.New(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB, more than io.Copy's buffer
	head := []byte("hdr:")
	dst := append(make([]byte, 0, len(head)+len(data)), head...)
	got, err := blobkit.Append(dst, "k", bytes.NewReader(data), int64(len(data)))
	is.NoErr(err)
	is.Equal(got, append(append([]byte{}, head...), data...))
	is.Equal(cap(got), len(head)+len(data)) // not grown

	for _, body := range []string{"short", strings.Repeat("x", 20)} {
		_, err := blobkit.Append(nil, "k", strings.NewReader(body), 10)
		is.True(errors.Is(err, imagegen.ErrBlobSize)) // 5 or 20 bytes for 10
	}
}

// Read reads a body into a slice of exactly its size, and refuses a
// negative size or a body of another length.
func TestRead(t *testing.T) {
	is := is.New(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	got, err := blobkit.Read("k", bytes.NewReader(data), int64(len(data)))
	is.NoErr(err)
	is.Equal(got, data)
	is.Equal(cap(got), len(data)) // not grown

	for _, tt := range []struct {
		body string
		size int64
	}{{"", -1}, {"short", 10}, {strings.Repeat("x", 20), 10}} {
		_, err := blobkit.Read("k", strings.NewReader(tt.body), tt.size)
		is.True(errors.Is(err, imagegen.ErrBlobSize)) // the size is wrong
	}
}

// Reader refuses a negative size even for an empty body, which has as
// many bytes as it says it has left: blob/file, which copies through
// Reader, stored an empty blob for a Put of size -1.
func TestReaderNegativeSize(t *testing.T) {
	is := is.New(t)
	_, err := io.ReadAll(blobkit.Reader("k", strings.NewReader(""), -1))
	is.True(errors.Is(err, imagegen.ErrBlobSize))
}

// Read makes room for the size it is told only as far as MaxPrealloc,
// and not at all when the reader tells another length: a Put that said
// 1 PiB panicked in makeslice (blob/memory, PostgreSQL's blobs).
func TestReadHugeSize(t *testing.T) {
	is := is.New(t)
	_, err := blobkit.Read("k", strings.NewReader("abc"), 1<<50)
	is.True(errors.Is(err, imagegen.ErrBlobSize)) // the reader has 3 bytes
	_, err = blobkit.Read("k", io.LimitReader(strings.NewReader("abc"), 3), 1<<50)
	is.True(errors.Is(err, imagegen.ErrBlobSize)) // short, found by reading
}
