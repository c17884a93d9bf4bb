package redis

import (
	"context"

	"github.com/imagegen/imagegen"
)

// Image returns an image's record.
func (s *Store) Image(ctx context.Context, id string) (*imagegen.Image, error) {
	f, err := s.rdb.HGetAll(ctx, s.k.image(id)).Result()
	if err != nil {
		return nil, wrapErr("image", err)
	}
	if len(f) == 0 || s.expired(atoi(f["expires"])) {
		return nil, imagegen.ErrImageNotFound
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
