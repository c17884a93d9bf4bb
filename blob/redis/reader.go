package redis

import (
	"context"
	"io"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/chunked"
)

// reader reads bytes [off, end) of a blob with GETRANGE, at most
// chunkBytes per round trip.
func (s *Store) reader(ctx context.Context, key string, info imagegen.BlobInfo, offset, off, end int64) *chunked.Reader[string] {
	rkey := s.rkey(key)
	return chunked.New(ctx, chunked.Config[string]{
		What:  "redis blobs: read " + key,
		Chunk: chunkBytes,
		Size:  info.Size,
		Off:   off,
		End:   end,
		Fetch: func(ctx context.Context, off, n int64) (string, error) {
			start := offset + off
			return s.rdb.GetRange(ctx, rkey, start, start+n-1).Result()
		},
	})
}

// ReadRange reads n bytes of the blob from off: the header and length in
// one round trip, then GETRANGE per chunk of the range (at most
// chunkBytes), never past it.
func (s *Store) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	info, offset, err := s.stat(ctx, key)
	if err != nil {
		return nil, err
	}
	if !imagegen.RangeFits(off, n, info.Size) {
		return nil, imagegen.RangePastEnd(key, off, n, info.Size)
	}
	return s.reader(ctx, key, info, offset, off, off+n), nil
}
