package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
)

// Image returns the record of a stored image that retention has not
// removed; its bytes are in Blobs().
func (s *Store) Image(ctx context.Context, id string) (*imagegen.Image, error) {
	img := imagegen.Image{ID: id}
	err := s.pool.QueryRow(ctx, s.sql(`SELECT task_id, owner, content_type, size, checksum, created_at, expires_at FROM {schema}.images
		WHERE id = $2 AND expires_at > {now}`), s.nowArg(), id).
		Scan(&img.TaskID, &img.Owner, &img.ContentType, &img.Size, &img.Checksum, &img.CreatedAt, &img.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, imagegen.ErrImageNotFound
	}
	if err != nil {
		return nil, s.wrapErr("image", err)
	}
	img.ExpiresAt, img.CreatedAt = img.ExpiresAt.UTC(), img.CreatedAt.UTC()
	return &img, nil
}
