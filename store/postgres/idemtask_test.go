package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// Idempotency records written at version 22 (no task_id, no
// kept_until) read as before once the schema is at version 23: a live
// one is answered, naming no task, and an expired in-flight one is
// taken over, not kept to be settled.
func TestIdempotencyRecordsOfVersion22(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	clock := imagegentest.NewClock(time.Time{})
	s := pgtest.NewStore(t, pool, postgres.Config{Clock: clock})
	is.NoErr(postgres.MigrateTo(ctx, pool, s.Schema(), 22))
	insert := fmt.Sprintf(`INSERT INTO %s.idempotency (owner, key, fingerprint, done, status, body, expires_at) VALUES ($1, $2, 'fp-a', $3, $4, $5, $6)`,
		pgx.Identifier{s.Schema()}.Sanitize())
	now := clock.Now()
	for _, r := range []struct {
		key    string
		done   bool
		status int
		body   []byte
		at     time.Time
	}{
		{"live", false, 0, nil, now.Add(time.Minute)},
		{"done", true, 201, []byte(`{"task_id":"t"}`), now.Add(time.Hour)},
		{"expired", false, 0, nil, now.Add(-time.Second)},
	} {
		_, err := pool.Exec(ctx, insert, "u", r.key, r.done, r.status, r.body, r.at)
		is.NoErr(err)
	}
	is.NoErr(postgres.Migrate(ctx, pool, s.Schema()))

	rec, err := s.BeginIdempotent(ctx, "u", "live", "fp-a", "t1", time.Minute, time.Hour)
	is.NoErr(err)
	is.True(rec != nil && !rec.Done && !rec.Expired)
	is.Equal(rec.TaskID, "")
	rec, err = s.BeginIdempotent(ctx, "u", "done", "fp-a", "t2", time.Minute, time.Hour)
	is.NoErr(err)
	is.True(rec != nil && rec.Done)
	is.Equal(string(rec.Body), `{"task_id":"t"}`)
	rec, err = s.BeginIdempotent(ctx, "u", "expired", "fp-b", "t3", time.Minute, time.Hour)
	is.NoErr(err)
	is.Equal(rec, nil) // taken over
	rec, err = s.BeginIdempotent(ctx, "u", "expired", "fp-b", "t4", time.Minute, time.Hour)
	is.NoErr(err)
	is.True(rec != nil && !rec.Expired)
	is.Equal(rec.TaskID, "t3") // this request's now

	// Down to version 22 and up again, the records are still there.
	is.NoErr(postgres.MigrateTo(ctx, pool, s.Schema(), 22))
	is.NoErr(postgres.Migrate(ctx, pool, s.Schema()))
	rec, err = s.BeginIdempotent(ctx, "u", "done", "fp-a", "t5", time.Minute, time.Hour)
	is.NoErr(err)
	is.True(rec != nil && rec.Done)
}

// An in-flight record kept to be settled is not swept with the expired
// records until its keep time has passed.
func TestSweepKeepsAnInFlightRecordToBeSettled(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	clock := imagegentest.NewClock(time.Time{})
	s := pgtest.NewStore(t, pgtest.Connect(t), postgres.Config{Clock: clock})
	rec, err := s.BeginIdempotent(ctx, "u", "k", "fp-a", "t1", time.Minute, time.Hour)
	is.NoErr(err)
	is.Equal(rec, nil)
	clock.Advance(2 * time.Minute)
	swept, err := s.Sweep(ctx)
	is.NoErr(err)
	is.Equal(swept.IdempotencyRecords, int64(0)) // kept
	rec, err = s.BeginIdempotent(ctx, "u", "k", "fp-a", "t2", time.Minute, time.Hour)
	is.NoErr(err)
	is.True(rec != nil && rec.Expired)
	is.Equal(rec.TaskID, "t1")
	clock.Advance(2 * time.Hour)
	swept, err = s.Sweep(ctx)
	is.NoErr(err)
	is.Equal(swept.IdempotencyRecords, int64(1))
}
