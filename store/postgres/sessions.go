package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
)

// putSessionSQL stores a session and, past $6 sessions of its owner,
// ends those of the others that expire first (the statement's snapshot
// does not see the row it inserts, so the others keep $6 - 1).
//
//	$1 now  $2 id  $3 owner  $4 key id  $5 ttl (µs)  $6 the most sessions an owner keeps
const putSessionSQL = `WITH put AS (
	INSERT INTO {schema}.sessions (id, owner, key_id, created_at, expires_at)
	VALUES ($2, $3, $4, {now}, {now} + $5 * interval '1 microsecond')
	ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, key_id = excluded.key_id,
		created_at = excluded.created_at, expires_at = excluded.expires_at
	RETURNING created_at, expires_at
), ended AS (
	DELETE FROM {schema}.sessions WHERE id IN (
		SELECT id FROM {schema}.sessions WHERE owner = $3 AND id <> $2
		ORDER BY expires_at DESC, id COLLATE "C" DESC OFFSET $6 - 1)
)
SELECT created_at, expires_at FROM put`

// PutSession stores a console session, live for ttl.
func (s *Store) PutSession(ctx context.Context, sess imagegen.Session, ttl time.Duration) (imagegen.Session, error) {
	if sess.ID == "" || sess.Owner == "" || micros(ttl) <= 0 {
		return imagegen.Session{}, fmt.Errorf("postgres store: a session needs an id, an owner and a ttl of at least 1µs: %w", imagegen.ErrInvalidParams)
	}
	err := s.pool.QueryRow(ctx, s.sql(putSessionSQL), s.nowArg(), sess.ID, sess.Owner, sess.KeyID, micros(ttl), imagegen.MaxSessionsPerOwner).
		Scan(&sess.CreatedAt, &sess.ExpiresAt)
	if err != nil {
		return imagegen.Session{}, s.wrapErr("put session", err)
	}
	sess.CreatedAt, sess.ExpiresAt = sess.CreatedAt.UTC(), sess.ExpiresAt.UTC()
	return sess, nil
}

// Session returns the live session with the id.
func (s *Store) Session(ctx context.Context, id string) (*imagegen.Session, error) {
	sess := imagegen.Session{ID: id}
	err := s.pool.QueryRow(ctx, s.sql(`SELECT owner, key_id, created_at, expires_at FROM {schema}.sessions
		WHERE id = $2 AND expires_at > {now}`), s.nowArg(), id).
		Scan(&sess.Owner, &sess.KeyID, &sess.CreatedAt, &sess.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, imagegen.ErrSessionNotFound
	}
	if err != nil {
		return nil, s.wrapErr("session", err)
	}
	sess.CreatedAt, sess.ExpiresAt = sess.CreatedAt.UTC(), sess.ExpiresAt.UTC()
	return &sess, nil
}

// EndSession ends the owner's session id.
func (s *Store) EndSession(ctx context.Context, owner, id string) error {
	_, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.sessions WHERE id = $1 AND owner = $2`), id, owner)
	return s.wrapErr("end session", err)
}

// EndSessions ends every session of the owner and counts the live ones.
func (s *Store) EndSessions(ctx context.Context, owner string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, s.sql(`WITH ended AS (
			DELETE FROM {schema}.sessions WHERE owner = $2 RETURNING expires_at
		)
		SELECT count(*) FILTER (WHERE expires_at > {now}) FROM ended`), s.nowArg(), owner).Scan(&n)
	return n, s.wrapErr("end sessions", err)
}
