package redis

import (
	"context"
	"fmt"
	"io"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/blob/internal/seek"
)

// rangeReader reads a blob's bytes with GETRANGE, at most chunkBytes per
// round trip, from wherever it was sought to.
type rangeReader struct {
	ctx    context.Context
	rdb    goredis.UniversalClient
	key    string
	offset int64 // where the bytes start in the value (the header's length)
	size   int64
	pos    int64
	buf    string // bytes fetched from pos on (kept as go-redis returns them: no copy)
}

func (r *rangeReader) Read(p []byte) (int, error) {
	if r.pos >= r.size {
		return 0, io.EOF
	}
	if len(r.buf) == 0 {
		n := min(int64(chunkBytes), r.size-r.pos)
		start := r.offset + r.pos
		s, err := r.rdb.GetRange(r.ctx, r.key, start, start+n-1).Result()
		if err != nil {
			return 0, fmt.Errorf("redis blobs: read: %w", err)
		}
		if s == "" {
			return 0, fmt.Errorf("redis blobs: %s changed while being read: %w", r.key, io.ErrUnexpectedEOF)
		}
		r.buf = s
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	r.pos += int64(n)
	return n, nil
}

func (r *rangeReader) Seek(offset int64, whence int) (int64, error) {
	abs, err := seek.Abs(r.pos, r.size, offset, whence)
	if err != nil {
		return abs, fmt.Errorf("redis blobs: %w", err)
	}
	if abs != r.pos {
		r.pos, r.buf = abs, ""
	}
	return abs, nil
}

func (r *rangeReader) Close() error {
	r.buf = ""
	return nil
}
