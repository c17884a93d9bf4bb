// Package chunked reads a stored value through ranges fetched on demand,
// at most one chunk per round trip: the blob readers of Redis (GETRANGE)
// and PostgreSQL (substring) share it. A reader holds at most one chunk,
// so the memory of a download does not grow with the value's size, and
// it never fetches past the end it was given, so a range costs its own
// bytes and no more.
package chunked

import (
	"context"
	"fmt"
	"io"

	"github.com/imagegen/imagegen/internal/seek"
)

// Fetch returns up to n bytes of the value from offset off (fewer only
// at its end; none when the value is gone or shorter than off).
type Fetch[B ~string | ~[]byte] func(ctx context.Context, off, n int64) (B, error)

// Config configures a Reader.
type Config[B ~string | ~[]byte] struct {
	Fetch Fetch[B]
	// What names the value in errors ("redis blobs: read img-1").
	What string
	// Chunk is the most one Fetch asks for.
	Chunk int64
	// Size is the value's length: Seek's io.SeekEnd is relative to it.
	Size int64
	// Off and End are where reading starts and stops (0 and Size for
	// the whole value).
	Off, End int64
	// First, when set, holds the bytes from Off on that the caller has
	// fetched already (with the value's size, say), so the first Read
	// makes no round trip.
	First B
}

// Reader reads [Off, End) of a value; it is an io.ReadSeekCloser (Seek
// moves within [0, End)). It is not safe for concurrent use.
type Reader[B ~string | ~[]byte] struct {
	ctx  context.Context
	c    Config[B]
	pos  int64
	buf  B // bytes fetched from pos on
	none B // the empty value, to drop buf
}

// New returns a Reader that fetches with ctx.
func New[B ~string | ~[]byte](ctx context.Context, c Config[B]) *Reader[B] {
	r := &Reader[B]{ctx: ctx, c: c, pos: c.Off, buf: c.First}
	if int64(len(r.buf)) > c.End-c.Off {
		r.buf = r.buf[:c.End-c.Off]
	}
	return r
}

func (r *Reader[B]) Read(p []byte) (int, error) {
	if r.pos >= r.c.End {
		return 0, io.EOF
	}
	if len(r.buf) == 0 {
		want := min(r.c.Chunk, r.c.End-r.pos)
		b, err := r.c.Fetch(r.ctx, r.pos, want)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", r.c.What, err)
		}
		if len(b) == 0 {
			return 0, fmt.Errorf("%s: the value ended or changed while being read: %w", r.c.What, io.ErrUnexpectedEOF)
		}
		if int64(len(b)) > want {
			b = b[:want]
		}
		r.buf = b
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	r.pos += int64(n)
	return n, nil
}

// Seek moves the next Read to the position asked for; bytes fetched for
// another position are dropped.
func (r *Reader[B]) Seek(offset int64, whence int) (int64, error) {
	abs, err := seek.Abs(r.pos, r.c.Size, offset, whence)
	if err != nil {
		return abs, fmt.Errorf("%s: %w", r.c.What, err)
	}
	if abs != r.pos {
		r.pos, r.buf = abs, r.none
	}
	return abs, nil
}

// Close drops the chunk held.
func (r *Reader[B]) Close() error {
	r.buf = r.none
	return nil
}
