package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
)

// BeginIdempotent records a request in flight, or returns the record the
// key already has, or renews an expired in-flight record that names its
// task (task_id, kept until kept_until) for the caller to settle. The
// insert takes over a record that is gone (expired and not kept to be
// settled) in the same statement, so two requests with one key never
// both begin; the renewal is as conditional, so only one of them
// settles.
func (s *Store) BeginIdempotent(ctx context.Context, owner, key, fingerprint, taskID string, inFlight, ttl time.Duration) (*imagegen.IdempotencyRecord, error) {
	for range 3 {
		tag, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.idempotency AS i (owner, key, fingerprint, task_id, expires_at, kept_until)
			VALUES ($2, $3, $4, $5, {now} + $6 * interval '1 microsecond', {now} + $7 * interval '1 microsecond')
			ON CONFLICT (owner, key) DO UPDATE
			SET fingerprint = excluded.fingerprint, done = false, status = 0, body = NULL, task_id = excluded.task_id,
				expires_at = excluded.expires_at, kept_until = excluded.kept_until
			WHERE i.expires_at <= {now} AND (i.done OR coalesce(i.task_id, '') = '' OR coalesce(i.kept_until, i.expires_at) <= {now})`),
			s.nowArg(), owner, key, fingerprint, taskID, micros(inFlight), micros(max(ttl, inFlight)))
		if err != nil {
			return nil, s.wrapErr("begin idempotent request", err)
		}
		if tag.RowsAffected() == 1 {
			return nil, nil
		}
		rec := imagegen.IdempotencyRecord{Expired: true}
		err = s.pool.QueryRow(ctx, s.sql(`UPDATE {schema}.idempotency
			SET expires_at = {now} + $4 * interval '1 microsecond', kept_until = {now} + $5 * interval '1 microsecond'
			WHERE owner = $2 AND key = $3 AND NOT done AND expires_at <= {now} AND task_id <> '' AND kept_until > {now}
			RETURNING fingerprint, task_id`), s.nowArg(), owner, key, micros(inFlight), micros(max(ttl, inFlight))).
			Scan(&rec.Fingerprint, &rec.TaskID)
		if err == nil {
			return &rec, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, s.wrapErr("begin idempotent request", err)
		}
		rec = imagegen.IdempotencyRecord{}
		err = s.pool.QueryRow(ctx, s.sql(`SELECT fingerprint, done, status, coalesce(body, ''), coalesce(task_id, '') FROM {schema}.idempotency
			WHERE owner = $2 AND key = $3 AND expires_at > {now}`), s.nowArg(), owner, key).
			Scan(&rec.Fingerprint, &rec.Done, &rec.Status, &rec.Body, &rec.TaskID)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // it expired, was settled or abandoned meanwhile: try again
		}
		if err != nil {
			return nil, s.wrapErr("begin idempotent request", err)
		}
		return &rec, nil
	}
	return nil, s.wrapErr("begin idempotent request", errors.New("the key changed hands three times in a row"))
}

// inFlightRecord is the condition of the live, unfinished record of the
// key ($2, $3) with fingerprint $4.
const inFlightRecord = `owner = $2 AND key = $3 AND fingerprint = $4 AND NOT done AND expires_at > {now}`

// FinishIdempotent stores the response of the request in flight with
// this fingerprint; without such a live record it changes nothing.
func (s *Store) FinishIdempotent(ctx context.Context, owner, key, fingerprint string, status int, body []byte, ttl time.Duration) error {
	if body == nil {
		body = []byte{}
	}
	_, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.idempotency
		SET done = true, status = $5, body = $6, expires_at = {now} + $7 * interval '1 microsecond', kept_until = NULL
		WHERE `+inFlightRecord), s.nowArg(), owner, key, fingerprint, status, body, micros(ttl))
	return s.wrapErr("finish idempotent request", err)
}

// AbandonIdempotent forgets the key if it holds the request in flight
// with this fingerprint.
func (s *Store) AbandonIdempotent(ctx context.Context, owner, key, fingerprint string) error {
	_, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.idempotency WHERE `+inFlightRecord), s.nowArg(), owner, key, fingerprint)
	return s.wrapErr("abandon idempotent request", err)
}
