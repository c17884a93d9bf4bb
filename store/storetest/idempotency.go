package storetest

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

func testIdempotency(t *testing.T, h Harness) {
	s, ok := h.Store.(imagegen.IdempotencyStore)
	if !ok {
		t.Skip("the store does not implement imagegen.IdempotencyStore")
	}
	is := is.New(t)
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
	is.NoErr(s.FinishIdempotent(ctx, "u", "k1", 201, body, ttl))
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
	is.NoErr(s.AbandonIdempotent(ctx, "u", "k2"))
	rec, err = s.BeginIdempotent(ctx, "u", "k2", "fp-c", inFlight)
	is.NoErr(err)
	is.True(rec == nil)
}
