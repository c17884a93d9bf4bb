package storetest

import (
	"testing"
	"time"

	"github.com/matryer/is"
)

func testIdempotency(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	const inFlight, ttl = time.Minute, 24 * time.Hour

	rec, err := s.BeginIdempotent(ctx, "u", "k1", "fp-a", inFlight)
	is.NoErr(err)
	is.True(rec == nil) // ours now
	rec, err = s.BeginIdempotent(ctx, "u", "k1", "fp-a", inFlight)
	is.NoErr(err)
	is.True(rec != nil)
	is.True(!rec.Done) // still in flight
	is.Equal(rec.Fingerprint, "fp-a")

	// Keys are per owner.
	rec, err = s.BeginIdempotent(ctx, "v", "k1", "fp-b", inFlight)
	is.NoErr(err)
	is.True(rec == nil)

	body := []byte(`{"task_id":"t","status":"pending"}`)
	is.NoErr(s.FinishIdempotent(ctx, "u", "k1", "fp-a", 201, body, ttl))
	rec, err = s.BeginIdempotent(ctx, "u", "k1", "fp-other", inFlight)
	is.NoErr(err)
	is.True(rec.Done)
	is.Equal(rec.Fingerprint, "fp-a") // the first request's, whatever is asked now
	is.Equal(rec.Status, 201)
	is.Equal(string(rec.Body), string(body))

	// Kept for the ttl, then forgotten.
	h.Advance(ttl - time.Second)
	rec, err = s.BeginIdempotent(ctx, "u", "k1", "fp-a", inFlight)
	is.NoErr(err)
	is.True(rec != nil && rec.Done)
	h.Advance(2 * time.Second)
	rec, err = s.BeginIdempotent(ctx, "u", "k1", "fp-a", inFlight)
	is.NoErr(err)
	is.True(rec == nil)

	// A request in flight that never finishes frees its key after inFlight.
	rec, err = s.BeginIdempotent(ctx, "u", "k2", "fp-a", inFlight)
	is.NoErr(err)
	is.True(rec == nil)
	h.Advance(inFlight)
	rec, err = s.BeginIdempotent(ctx, "u", "k2", "fp-a", inFlight)
	is.NoErr(err)
	is.True(rec == nil)

	// Abandoned keys run afresh.
	is.NoErr(s.AbandonIdempotent(ctx, "u", "k2", "fp-a"))
	rec, err = s.BeginIdempotent(ctx, "u", "k2", "fp-c", inFlight)
	is.NoErr(err)
	is.True(rec == nil)
}

// A request whose in-flight record has expired, or been taken over by a
// later request with the key, must not write its answer or forget the
// key: finishing or abandoning changes only its own in-flight record.
func testIdempotencyLateFinish(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	const inFlight, ttl = time.Minute, 24 * time.Hour
	body := []byte(`{"task_id":"t","status":"pending"}`)

	// Expired and gone: finishing writes nothing, the key is free.
	rec, err := s.BeginIdempotent(ctx, "u", "gone", "fp-a", inFlight)
	is.NoErr(err)
	is.True(rec == nil)
	h.Advance(inFlight + time.Second)
	is.NoErr(s.FinishIdempotent(ctx, "u", "gone", "fp-a", 201, body, ttl))
	rec, err = s.BeginIdempotent(ctx, "u", "gone", "fp-b", inFlight)
	is.NoErr(err)
	is.True(rec == nil) // no record with an empty or stale fingerprint was left

	// Never begun, or abandoned: finishing writes nothing.
	is.NoErr(s.FinishIdempotent(ctx, "u", "never", "fp-a", 201, body, ttl))
	rec, err = s.BeginIdempotent(ctx, "u", "never", "fp-a", inFlight)
	is.NoErr(err)
	is.True(rec == nil)

	// Expired, then taken by a request with another body: the late
	// finish and abandon of the first leave the second's record alone.
	rec, err = s.BeginIdempotent(ctx, "u", "taken", "fp-a", inFlight)
	is.NoErr(err)
	is.True(rec == nil)
	h.Advance(inFlight + time.Second)
	rec, err = s.BeginIdempotent(ctx, "u", "taken", "fp-b", inFlight)
	is.NoErr(err)
	is.True(rec == nil)
	is.NoErr(s.FinishIdempotent(ctx, "u", "taken", "fp-a", 201, body, ttl))
	is.NoErr(s.AbandonIdempotent(ctx, "u", "taken", "fp-a"))
	rec, err = s.BeginIdempotent(ctx, "u", "taken", "fp-b", inFlight)
	is.NoErr(err)
	is.True(rec != nil)
	is.True(!rec.Done) // still the second request's, in flight
	is.Equal(rec.Fingerprint, "fp-b")
	is.NoErr(s.FinishIdempotent(ctx, "u", "taken", "fp-b", 422, []byte(`{}`), ttl))
	rec, err = s.BeginIdempotent(ctx, "u", "taken", "fp-b", inFlight)
	is.NoErr(err)
	is.True(rec != nil && rec.Done)
	is.Equal(rec.Status, 422)

	// A finished record is final: a second finish or an abandon with
	// the same fingerprint changes nothing.
	is.NoErr(s.FinishIdempotent(ctx, "u", "taken", "fp-b", 201, body, ttl))
	is.NoErr(s.AbandonIdempotent(ctx, "u", "taken", "fp-b"))
	rec, err = s.BeginIdempotent(ctx, "u", "taken", "fp-b", inFlight)
	is.NoErr(err)
	is.True(rec != nil && rec.Done)
	is.Equal(rec.Status, 422)
	is.Equal(string(rec.Body), `{}`)
}
