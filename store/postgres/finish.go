package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/imagegen/imagegen"
)

// completeSQL moves the task to success if attempt $3 holds it, stores
// its images, queues its callback and tells the watchers, in one
// statement. It returns a row only when the lease was held.
//
//	$1 now  $2 id  $3 attempt  $4 retention (µs)  $5 channel
//	$6 image ids  $7 content types  $8 image bytes
const completeSQL = `
WITH done AS (
	UPDATE {schema}.tasks
	SET status = 'success', images = $6::text[], lease_until = NULL, updated_at = {now}, finished_at = {now},
		expires_at = {now} + $4 * interval '1 microsecond',
		hook_due = CASE WHEN callback_url <> '' THEN {now} END
	WHERE ` + holds + `
	RETURNING id, expires_at
), stored AS (
	INSERT INTO {schema}.images (id, task_id, content_type, data, expires_at)
	SELECT img.id, done.id, img.content_type, img.data, done.expires_at
	FROM done, unnest($6::text[], $7::text[], $8::bytea[]) AS img(id, content_type, data)
)
SELECT pg_notify($5, done.id)::text FROM done`

// CompleteTask stores the images and moves the task to success.
func (s *Store) CompleteTask(ctx context.Context, id string, attempt int, images []imagegen.Image) error {
	ids := make([]string, len(images))
	types := make([]string, len(images))
	data := make([][]byte, len(images))
	for i, img := range images {
		if img.ID == "" {
			return errors.New("postgres store: image needs an ID")
		}
		ids[i], types[i], data[i] = img.ID, img.ContentType, img.Data
	}
	tag, err := s.pool.Exec(ctx, s.sql(completeSQL), s.nowArg(), id, attempt, micros(s.retention), s.finished, ids, types, data)
	return s.holderResult(id, attempt, tag.RowsAffected(), err)
}

// FailTask moves the task to failed and refunds it once.
func (s *Store) FailTask(ctx context.Context, id string, attempt int, f imagegen.Failure) error {
	var held bool
	err := s.pool.QueryRow(ctx, s.sql(`SELECT {schema}.fail_task($2, $3, $4, $5, {now}, $6 * interval '1 microsecond', $7)`),
		s.nowArg(), id, attempt, string(f.Code), f.Message, micros(s.retention), s.finished).Scan(&held)
	if err != nil {
		return s.holderResult(id, attempt, 0, err)
	}
	if !held {
		return s.holderResult(id, attempt, 0, nil)
	}
	return nil
}

// CancelTask fails owner's pending or processing task and refunds it.
func (s *Store) CancelTask(ctx context.Context, owner, id string) error {
	var n int
	err := s.pool.QueryRow(ctx, s.sql(`SELECT {schema}.cancel_task($2, $3, $4, $5, {now}, $6 * interval '1 microsecond', $7)`),
		s.nowArg(), owner, id, string(imagegen.CodeCancelled), imagegen.CancelledMessage, micros(s.retention), s.finished).Scan(&n)
	switch {
	case err != nil:
		return wrapErr("cancel", err)
	case n == 0:
		return imagegen.ErrTaskNotFound
	case n < 0:
		return fmt.Errorf("postgres store: cancel task %s: %w", id, imagegen.ErrInvalidTransition)
	}
	return nil
}
