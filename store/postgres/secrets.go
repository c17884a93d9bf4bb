package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// SharedSecret returns the secret stored under name, storing the one
// made by generate if there is none yet, so every process on this
// database gets the same secret.
func (s *Store) SharedSecret(ctx context.Context, name string, generate func() []byte) ([]byte, error) {
	candidate := generate()
	for range 3 {
		var v []byte
		err := s.pool.QueryRow(ctx, s.sql(`WITH ins AS (
				INSERT INTO {schema}.secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING value
			)
			SELECT value FROM ins UNION ALL SELECT value FROM {schema}.secrets WHERE name = $1 LIMIT 1`),
			name, candidate).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // stored by another process after this statement's snapshot: read again
		}
		return v, s.wrapErr("shared secret", err)
	}
	return nil, s.wrapErr("shared secret", errors.New("could not read or store the secret"))
}

// ReplaceSharedSecret stores next under name if old is stored there: an
// UPDATE conditional on the value, so that of two at once the second
// waits for the first's row lock, finds the value changed and updates
// nothing.
func (s *Store) ReplaceSharedSecret(ctx context.Context, name string, old, next []byte) (bool, error) {
	tag, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.secrets SET value = $3 WHERE name = $1 AND value = $2`), name, old, next)
	if err != nil {
		return false, s.wrapErr("replace shared secret", err)
	}
	return tag.RowsAffected() == 1, nil
}
