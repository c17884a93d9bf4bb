// Package memory is an imagegen.BlobStore in process memory: the
// default of the memory store. It suits tests and a single process whose
// images may be lost on restart.
package memory

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobkit"
)

var (
	_ imagegen.BlobStore       = (*Store)(nil)
	_ imagegen.BlobRangeReader = (*Store)(nil)
)

// Config configures a Store.
type Config struct {
	// Clock stamps each blob's ModTime. Default: imagegen.SystemClock.
	Clock imagegen.Clock
}

// Store keeps blobs in a map. It is safe for concurrent use.
type Store struct {
	clock imagegen.Clock
	mu    sync.RWMutex
	blobs map[string]blob
	seq   uint64 // version counter, for ETags
}

type blob struct {
	data []byte // never modified after Put
	info imagegen.BlobInfo
}

// New returns an empty Store.
func New(c Config) *Store {
	if c.Clock == nil {
		c.Clock = imagegen.SystemClock{}
	}
	return &Store{clock: c.Clock, blobs: make(map[string]blob)}
}

// Put reads size bytes from r and keeps them under key.
func (s *Store) Put(_ context.Context, key string, r io.Reader, size int64, _ string) error {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return err
	}
	data, err := blobkit.Read(key, r, size)
	if err != nil {
		return fmt.Errorf("memory blobs: put %s: %w", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.blobs[key] = blob{data: data, info: imagegen.BlobInfo{
		Key: key, Size: size, ModTime: s.clock.Now(), ETag: `"` + strconv.FormatUint(s.seq, 36) + `"`,
	}}
	return nil
}

// Open returns the blob; its Body reads the stored bytes without a copy.
func (s *Store) Open(_ context.Context, key string) (*imagegen.Blob, error) {
	b, err := s.get(key)
	if err != nil {
		return nil, err
	}
	return &imagegen.Blob{BlobInfo: b.info, Body: nopCloser{bytes.NewReader(b.data)}}, nil
}

// ReadRange reads n bytes of the blob from off, without a copy.
func (s *Store) ReadRange(_ context.Context, key string, off, n int64) (io.ReadCloser, error) {
	b, err := s.get(key)
	if err != nil {
		return nil, err
	}
	if !imagegen.RangeFits(off, n, b.info.Size) {
		return nil, imagegen.RangePastEnd(key, off, n, b.info.Size)
	}
	return nopCloser{bytes.NewReader(b.data[off : off+n])}, nil
}

// Stat returns the blob's info.
func (s *Store) Stat(_ context.Context, key string) (imagegen.BlobInfo, error) {
	b, err := s.get(key)
	return b.info, err
}

func (s *Store) get(key string) (blob, error) {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return blob{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.blobs[key]
	if !ok {
		return blob{}, fmt.Errorf("memory blobs: %s: %w", key, imagegen.ErrBlobNotFound)
	}
	return b, nil
}

// Delete removes the blob.
func (s *Store) Delete(_ context.Context, key string) error {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.blobs, key)
	return nil
}

// List calls fn for every blob, on a snapshot taken first (fn may call
// the Store).
func (s *Store) List(ctx context.Context, fn func(imagegen.BlobInfo) error) error {
	s.mu.RLock()
	infos := make([]imagegen.BlobInfo, 0, len(s.blobs))
	for _, b := range s.blobs {
		infos = append(infos, b.info)
	}
	s.mu.RUnlock()
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

// Len reports how many blobs the store holds.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.blobs)
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
