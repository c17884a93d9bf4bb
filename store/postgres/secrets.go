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
