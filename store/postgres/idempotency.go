package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
)

// BeginIdempotent records a request in flight, or returns the record the
// key already has. The insert takes over an expired record in the same
// statement, so two requests with one key never both begin.
func (s *Store) BeginIdempotent(ctx context.Context, owner, key, fingerprint string, inFlight time.Duration) (*imagegen.IdempotencyRecord, error) {
	for range 3 {
		tag, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.idempotency AS i (owner, key, fingerprint, expires_at)
			VALUES ($2, $3, $4, {now} + $5 * interval '1 microsecond')
			ON CONFLICT (owner, key) DO UPDATE
			SET fingerprint = excluded.fingerprint, done = false, status = 0, body = NULL, expires_at = excluded.expires_at
			WHERE i.expires_at <= {now}`), s.nowArg(), owner, key, fingerprint, micros(inFlight))
		if err != nil {
			return nil, s.wrapErr("begin idempotent request", err)
		}
		if tag.RowsAffected() == 1 {
			return nil, nil
		}
		var rec imagegen.IdempotencyRecord
		err = s.pool.QueryRow(ctx, s.sql(`SELECT fingerprint, done, status, coalesce(body, '') FROM {schema}.idempotency
			WHERE owner = $2 AND key = $3 AND expires_at > {now}`), s.nowArg(), owner, key).
			Scan(&rec.Fingerprint, &rec.Done, &rec.Status, &rec.Body)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // it expired or was abandoned meanwhile: try again
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
		SET done = true, status = $5, body = $6, expires_at = {now} + $7 * interval '1 microsecond'
		WHERE `+inFlightRecord), s.nowArg(), owner, key, fingerprint, status, body, micros(ttl))
	return s.wrapErr("finish idempotent request", err)
}

// AbandonIdempotent forgets the key if it holds the request in flight
// with this fingerprint.
func (s *Store) AbandonIdempotent(ctx context.Context, owner, key, fingerprint string) error {
	_, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.idempotency WHERE `+inFlightRecord), s.nowArg(), owner, key, fingerprint)
	return s.wrapErr("abandon idempotent request", err)
}
