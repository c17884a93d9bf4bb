// Package blobkit is the kit of a BlobStore backend's author: readers
// that take exactly the size a Put announced (Reader, Read, Append), so
// that a short or long body is never stored and a blob kept in one slice
// is read without growing it. The service and its users never need it;
// the conformance suite is package blobtest.
package blobkit

import (
	"fmt"
	"io"

	"github.com/imagegen/imagegen"
)

// Append appends exactly size bytes read from r (through
// Reader) to dst and returns the result. Give dst room for them
// (cap(dst)-len(dst) >= size) and nothing is allocated beyond it: a
// BlobStore that keeps a blob behind a header in one slice reads it this
// way (Read, for a slice of the blob alone). (A bytes.Buffer sized
// to the blob would still grow it to twice its size when it probes for
// the end.)
func Append(dst []byte, key string, r io.Reader, size int64) ([]byte, error) {
	w := &sliceWriter{b: dst}
	_, err := io.Copy(w, Reader(key, r, size))
	return w.b, err
}

// Read reads exactly size bytes from r (through Reader) into a
// new slice of that size: the BlobStores that keep a blob in one slice
// read a Put's body this way. A negative size, like a body of another
// length, is an error wrapping imagegen.ErrBlobSize.
//
// The size is a caller's word, not the body's: a reader that tells its
// length (a bytes.Reader, a strings.Reader, a bytes.Buffer: Len) and
// tells another is refused before anything is allocated, and room is
// made up front for at most MaxPrealloc bytes (the rest, if the body
// has them, as they come). Else a Put that said 1 PiB would panic
// (makeslice), and one that said 1 TiB end the process out of memory.
func Read(key string, r io.Reader, size int64) ([]byte, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: blob %s: negative size %d", imagegen.ErrBlobSize, key, size)
	}
	if l, ok := r.(interface{ Len() int }); ok && int64(l.Len()) != size {
		return nil, fmt.Errorf("%w: blob %s: body holds %d bytes, expected %d", imagegen.ErrBlobSize, key, l.Len(), size)
	}
	return Append(make([]byte, 0, min(size, MaxPrealloc)), key, r, size)
}

// MaxPrealloc is the most room Read makes for a body before reading it:
// more than any image, less than what would hurt to allocate for a size
// that was wrong.
const MaxPrealloc = 64 << 20

// sliceWriter appends what is written to a slice.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// Reader reads r and fails with an error wrapping imagegen.ErrBlobSize if r
// gives fewer or more than size bytes: BlobStore.Put implementations
// read through it, so a short or long body is never stored. A negative
// size fails at the first Read, without reading r: no body has that many
// bytes (an empty one would otherwise pass as one of exactly size).
func Reader(key string, r io.Reader, size int64) io.Reader {
	return &exactReader{key: key, r: r, left: size, size: size}
}

type exactReader struct {
	key        string
	r          io.Reader
	left, size int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.size < 0 {
		return 0, fmt.Errorf("%w: blob %s: negative size %d", imagegen.ErrBlobSize, e.key, e.size)
	}
	if e.left <= 0 {
		// Anything more than size is an error; probe for it.
		var one [1]byte
		n, err := e.r.Read(one[:])
		if n > 0 {
			return 0, e.mismatch(e.size + 1)
		}
		if err == nil {
			return 0, nil
		}
		return 0, err // io.EOF: exactly size bytes
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		return n, e.mismatch(e.size - e.left)
	}
	if err == io.EOF {
		err = nil // the probe above reports the end
	}
	return n, err
}

func (e *exactReader) mismatch(n int64) error {
	return fmt.Errorf("%w: blob %s: read %d bytes, expected %d", imagegen.ErrBlobSize, e.key, n, e.size)
}
