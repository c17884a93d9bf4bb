package redis

import (
	"context"

	"github.com/imagegen/imagegen"
)

// Image returns an image's record.
func (s *Store) Image(ctx context.Context, id string) (*imagegen.Image, error) {
	f, err := s.liveHash(ctx, s.byID(id).image(id), "image", imagegen.ErrImageNotFound)
	if err != nil {
		return nil, err
	}
	return &imagegen.Image{
		ID:          id,
		TaskID:      f["task"],
		Owner:       f["owner"],
		ContentType: f["type"],
		Size:        atoi(f["size"]),
		Checksum:    f["sum"],
		CreatedAt:   msTime(f["created"]),
		ExpiresAt:   msTime(f["expires"]),
	}, nil
}

// Blobs returns the store of image bytes (Config.Blobs).
func (s *Store) Blobs() imagegen.BlobStore { return s.blobs }
