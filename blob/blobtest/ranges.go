package blobtest

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// testReadRange reads ranges through imagegen.ReadBlobRange: the store's
// ReadRange when it has one, else Open, Seek and a limit. The blob is
// larger than the chunk the Redis and PostgreSQL readers fetch (256 KiB),
// so ranges cross chunk boundaries.
func testReadRange(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	name := keys(t, s)
	key := name("ranged")
	data := pattern(600_000, 12)
	put(t, s, key, data)
	size := int64(len(data))
	for _, r := range [][2]int64{{0, size}, {1000, 10}, {size - 1, 1}, {260_000, 300_000}, {262_143, 2}, {0, 1}} {
		body, err := imagegen.ReadBlobRange(ctx, s, key, r[0], r[1])
		is.NoErr(err)
		got, err := io.ReadAll(body)
		is.NoErr(err)
		is.NoErr(body.Close())
		is.True(bytes.Equal(got, data[r[0]:r[0]+r[1]])) // exactly the range
	}

	// An empty range only checks that the blob is there.
	for _, off := range []int64{0, size} {
		body, err := imagegen.ReadBlobRange(ctx, s, key, off, 0)
		is.NoErr(err)
		got, _ := io.ReadAll(body)
		is.Equal(len(got), 0)
		is.NoErr(body.Close())
	}
	_, err := imagegen.ReadBlobRange(ctx, s, key, size+1, 0)
	is.True(errors.Is(err, imagegen.ErrBlobSize))

	// A range past the end, a missing blob, a negative range.
	for _, r := range [][2]int64{{size - 1, 2}, {size, 1}, {size + 10, 5}} {
		body, err := imagegen.ReadBlobRange(ctx, s, key, r[0], r[1])
		if err == nil { // a store may tell only at the first read
			_, err = io.ReadAll(body)
			_ = body.Close()
		}
		is.True(errors.Is(err, imagegen.ErrBlobSize) || errors.Is(err, io.ErrUnexpectedEOF)) // past the end
	}
	for _, n := range []int64{0, 10} {
		body, err := imagegen.ReadBlobRange(ctx, s, name("missing"), 0, n)
		if err == nil {
			_, err = io.ReadAll(body)
			_ = body.Close()
		}
		is.True(errors.Is(err, imagegen.ErrBlobNotFound))
	}
	_, err = imagegen.ReadBlobRange(ctx, s, key, -1, 5)
	is.True(errors.Is(err, imagegen.ErrBlobSize))

	// A range whose end overflows an int64 is past the end too: not a
	// panic, nor a short read that looks like the range. The store's own
	// ReadRange is asked as well as ReadBlobRange, which checks first.
	read := []func(off, n int64) (io.ReadCloser, error){
		func(off, n int64) (io.ReadCloser, error) { return imagegen.ReadBlobRange(ctx, s, key, off, n) },
	}
	if rr, ok := s.(imagegen.BlobRangeReader); ok {
		read = append(read, func(off, n int64) (io.ReadCloser, error) { return rr.ReadRange(ctx, key, off, n) })
	}
	for _, readRange := range read {
		for _, r := range [][2]int64{{1, math.MaxInt64}, {size, math.MaxInt64}, {math.MaxInt64, 1}, {math.MaxInt64, math.MaxInt64}} {
			body, err := readRange(r[0], r[1])
			if err == nil {
				_, err = io.ReadAll(body)
				_ = body.Close()
			}
			is.True(errors.Is(err, imagegen.ErrBlobSize) || errors.Is(err, io.ErrUnexpectedEOF)) // past the end
		}
	}
}
