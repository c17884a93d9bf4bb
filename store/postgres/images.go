package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
)

// Image returns a stored image that retention has not removed.
func (s *Store) Image(ctx context.Context, id string) (*imagegen.Image, error) {
	img := imagegen.Image{ID: id}
	err := s.pool.QueryRow(ctx, s.sql(`SELECT task_id, content_type, data, expires_at FROM {schema}.images
		WHERE id = $2 AND expires_at > {now}`), s.nowArg(), id).Scan(&img.TaskID, &img.ContentType, &img.Data, &img.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, imagegen.ErrImageNotFound
	}
	if err != nil {
		return nil, wrapErr("image", err)
	}
	img.ExpiresAt = img.ExpiresAt.UTC()
	return &img, nil
}
