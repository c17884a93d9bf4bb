package redis

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"
)

// Idempotency records as the previous version wrote them (no task, no
// keep time; the hash's TTL was the in-flight time) read as before: a
// live one is answered, naming no task, and an expired in-flight one is
// taken over, not kept to be settled (it names no task to look for).
func TestIdempotencyRecordsOfThePreviousVersion(t *testing.T) {
	fundedStores(t, 1, func(t *testing.T, s *Store) {
		is := is.New(t)
		ctx := context.Background()
		old := func(key string, fields ...any) {
			k := s.idemKey("a", key)
			is.NoErr(s.rdb.HSet(ctx, k, fields...).Err())
			is.NoErr(s.rdb.PExpire(ctx, k, time.Minute).Err())
		}
		far := time.Now().Add(time.Hour).UnixMilli()
		old("live", "fp", "fp-a", "state", "inflight", "expires", far, "tok", "x")
		old("done", "fp", "fp-a", "state", "done", "status", 201, "body", `{"task_id":"t"}`, "expires", far, "tok", "x")
		old("expired", "fp", "fp-a", "state", "inflight", "expires", 1, "tok", "x") // its TTL not run out yet

		rec, err := s.BeginIdempotent(ctx, "a", "live", "fp-a", "t1", time.Minute, time.Hour)
		is.NoErr(err)
		is.True(rec != nil && !rec.Done && !rec.Expired)
		is.Equal(rec.TaskID, "")
		rec, err = s.BeginIdempotent(ctx, "a", "done", "fp-a", "t2", time.Minute, time.Hour)
		is.NoErr(err)
		is.True(rec != nil && rec.Done)
		is.Equal(string(rec.Body), `{"task_id":"t"}`)
		rec, err = s.BeginIdempotent(ctx, "a", "expired", "fp-b", "t3", time.Minute, time.Hour)
		is.NoErr(err)
		is.Equal(rec, nil) // taken over
		rec, err = s.BeginIdempotent(ctx, "a", "expired", "fp-b", "t4", time.Minute, time.Hour)
		is.NoErr(err)
		is.True(rec != nil && !rec.Expired)
		is.Equal(rec.TaskID, "t3") // this request's now
	})
}
