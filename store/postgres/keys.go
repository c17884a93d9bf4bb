package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// PutKey stores a new key; imagegen.ErrKeyExists when its hash is taken.
func (s *Store) PutKey(ctx context.Context, k imagegen.APIKey) error {
	if err := storekit.CheckNewKey(k); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.api_keys (hash, id, owner, hint, name, created_at, revoked)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (hash) DO NOTHING`),
		k.Hash, k.ID, k.Owner, k.Hint, k.Name, k.CreatedAt, k.Revoked)
	if err != nil {
		return s.wrapErr("put key", err)
	}
	if tag.RowsAffected() == 0 {
		return imagegen.ErrKeyExists
	}
	return nil
}

const keyColumns = `hash, id, owner, hint, name, created_at, revoked, last_used_at`

func scanKey(r pgx.CollectableRow) (imagegen.APIKey, error) {
	var k imagegen.APIKey
	var used *time.Time
	err := r.Scan(&k.Hash, &k.ID, &k.Owner, &k.Hint, &k.Name, &k.CreatedAt, &k.Revoked, &used)
	k.CreatedAt = k.CreatedAt.UTC()
	if used != nil {
		k.LastUsedAt = used.UTC()
	}
	return k, err
}

// KeyByHash returns the live key with the hash.
func (s *Store) KeyByHash(ctx context.Context, hash string) (*imagegen.APIKey, error) {
	rows, err := s.pool.Query(ctx, s.sql(`SELECT `+keyColumns+` FROM {schema}.api_keys WHERE hash = $1 AND NOT revoked`), hash)
	if err != nil {
		return nil, s.wrapErr("key", err)
	}
	k, err := pgx.CollectExactlyOneRow(rows, scanKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, imagegen.ErrKeyNotFound
	}
	if err != nil {
		return nil, s.wrapErr("key", err)
	}
	return &k, nil
}

// Keys lists the owner's keys, oldest first.
func (s *Store) Keys(ctx context.Context, owner string) ([]imagegen.APIKey, error) {
	return queryRows(ctx, s, "keys", scanKey, `SELECT `+keyColumns+` FROM {schema}.api_keys WHERE owner = $1 ORDER BY seq`, owner)
}

// RevokeKey revokes the owner's key id.
func (s *Store) RevokeKey(ctx context.Context, owner, id string) error {
	tag, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.api_keys SET revoked = true WHERE owner = $1 AND id = $2`), owner, id)
	if err != nil {
		return s.wrapErr("revoke key", err)
	}
	if tag.RowsAffected() == 0 {
		return imagegen.ErrKeyNotFound
	}
	return nil
}

// DeleteKey deletes the owner's revoked key id.
func (s *Store) DeleteKey(ctx context.Context, owner, id string) error {
	tag, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.api_keys WHERE owner = $1 AND id = $2 AND revoked`), owner, id)
	if err != nil {
		return s.wrapErr("delete key", err)
	}
	if tag.RowsAffected() == 0 {
		return imagegen.ErrKeyNotFound
	}
	return nil
}

// TouchKey records the key's use now, unless its last recorded use is
// less than imagegen.KeyUseGranularity ago; a recent use makes it a
// read of one row by its primary key.
func (s *Store) TouchKey(ctx context.Context, hash string) error {
	var found bool
	err := s.pool.QueryRow(ctx, s.sql(`WITH touched AS (
			UPDATE {schema}.api_keys SET last_used_at = {now}
			WHERE hash = $2 AND (last_used_at IS NULL OR last_used_at <= {now} - $3 * interval '1 microsecond')
			RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM touched) OR EXISTS (SELECT 1 FROM {schema}.api_keys WHERE hash = $2)`),
		s.nowArg(), hash, micros(imagegen.KeyUseGranularity)).Scan(&found)
	if err != nil {
		return s.wrapErr("touch key", err)
	}
	if !found {
		return imagegen.ErrKeyNotFound
	}
	return nil
}
