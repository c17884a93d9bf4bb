package memory

import (
	"context"

	"github.com/imagegen/imagegen"
)

// Image returns an image's record.
func (s *Store) Image(_ context.Context, id string) (*imagegen.Image, error) {
	s.lock()
	defer s.mu.Unlock()
	img, ok := s.images[id]
	if !ok {
		return nil, imagegen.ErrImageNotFound
	}
	c := *img
	return &c, nil
}

// Blobs returns the store of image bytes (Config.Blobs).
func (s *Store) Blobs() imagegen.BlobStore { return s.blobs }
