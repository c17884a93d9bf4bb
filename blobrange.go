package imagegen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
)

// BlobRangeReader is a BlobStore that reads one byte range of a blob in
// a single call, fetching only those bytes (one GET with a Range on S3,
// GETRANGE on Redis, substring() in PostgreSQL), with no separate look
// at the blob's info first where the store can avoid it. Every BlobStore
// of this module is one; ReadBlobRange serves the others through Open,
// Seek and a limit.
type BlobRangeReader interface {
	// ReadRange returns a reader of the n bytes of key from offset off
	// on; close it when done. A missing blob is ErrBlobNotFound (from
	// ReadRange, or at the latest from the first Read), a range that
	// ends past the blob's end an error wrapping ErrBlobSize. The reader
	// never fetches bytes from the store beyond off+n. An empty range
	// (n == 0) only checks that the blob is there, as cheaply as the
	// store can (no checksum of its bytes).
	ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
}

// ReadBlobRange reads bytes [off, off+n) of key in s: through ReadRange
// when s is a BlobRangeReader, else through Open, Seek and a limit. An
// empty range (n == 0) only checks that the blob exists (ReadRange, or
// Stat), so that a HEAD request or an empty image answers as a GET
// would.
func ReadBlobRange(ctx context.Context, s BlobStore, key string, off, n int64) (io.ReadCloser, error) {
	if !RangeFits(off, n, math.MaxInt64) { // no blob is that long
		return nil, fmt.Errorf("%w: blob %s: range %d+%d", ErrBlobSize, key, off, n)
	}
	if rr, ok := s.(BlobRangeReader); ok {
		return rr.ReadRange(ctx, key, off, n)
	}
	if n == 0 {
		info, err := s.Stat(ctx, key)
		if err != nil {
			return nil, err
		}
		if off > info.Size {
			return nil, RangePastEnd(key, off, n, info.Size)
		}
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	b, err := s.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	if !RangeFits(off, n, b.Size) {
		_ = b.Body.Close()
		return nil, RangePastEnd(key, off, n, b.Size)
	}
	if _, err := b.Body.Seek(off, io.SeekStart); err != nil {
		_ = b.Body.Close()
		return nil, fmt.Errorf("imagegen: blob %s: seek: %w", key, err)
	}
	return limitedBody{Reader: io.LimitReader(b.Body, n), Closer: b.Body}, nil
}

// RangeFits reports whether bytes [off, off+n) lie within a blob of size
// bytes. It never computes off+n, which overflows for a huge off or n: a
// BlobRangeReader that checked off+n > size would take such a range for
// one that fits (and slice past the blob, or send a range it does not
// mean).
func RangeFits(off, n, size int64) bool {
	return off >= 0 && n >= 0 && off <= size && n <= size-off
}

// RangePastEnd is the error of a range [off, off+n) of a blob of size
// bytes that ends past its end (it wraps ErrBlobSize). BlobRangeReader
// implementations return it.
func RangePastEnd(key string, off, n, size int64) error {
	if size < 0 { // not known
		return fmt.Errorf("%w: blob %s: range %d-%d is past its end", ErrBlobSize, key, off, off+n-1)
	}
	return fmt.Errorf("%w: blob %s: range %d-%d is past its end (%d bytes)", ErrBlobSize, key, off, off+n-1, size)
}

type limitedBody struct {
	io.Reader
	io.Closer
}
