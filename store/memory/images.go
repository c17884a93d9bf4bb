package memory

import (
	"context"

	"github.com/imagegen/imagegen"
)

// Image returns a stored image. Its Data is shared, not copied.
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
