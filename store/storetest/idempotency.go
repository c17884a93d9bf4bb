package storetest

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

// How long the idempotency tests hold a key in flight, and keep an answer.
const inFlight, ttl = time.Minute, 24 * time.Hour

// begin begins owner's request with key and fingerprint, and returns the
// record the store already had (nil: the key is the caller's now).
func begin(t *testing.T, s imagegen.Store, owner, key, fingerprint string) *imagegen.IdempotencyRecord {
	t.Helper()
	rec, err := s.BeginIdempotent(ctx, owner, key, fingerprint, inFlight)
	if err != nil {
		t.Fatalf("begin %s/%s: %v", owner, key, err)
	}
	return rec
}

func testIdempotency(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store

	is.True(begin(t, s, "u", "k1", "fp-a") == nil) // ours now
	rec := begin(t, s, "u", "k1", "fp-a")
	is.True(rec != nil)
	is.True(!rec.Done) // still in flight
	is.Equal(rec.Fingerprint, "fp-a")

	// Keys are per owner.
	is.True(begin(t, s, "v", "k1", "fp-b") == nil)

	body := []byte(`{"task_id":"t","status":"pending"}`)
	is.NoErr(s.FinishIdempotent(ctx, "u", "k1", "fp-a", 201, body, ttl))
	rec = begin(t, s, "u", "k1", "fp-other")
	is.True(rec.Done)
	is.Equal(rec.Fingerprint, "fp-a") // the first request's, whatever is asked now
	is.Equal(rec.Status, 201)
	is.Equal(string(rec.Body), string(body))

	// Kept for the ttl, then forgotten.
	h.Advance(ttl - time.Second)
	rec = begin(t, s, "u", "k1", "fp-a")
	is.True(rec != nil && rec.Done)
	h.Advance(2 * time.Second)
	is.True(begin(t, s, "u", "k1", "fp-a") == nil)

	// A request in flight that never finishes frees its key after inFlight.
	is.True(begin(t, s, "u", "k2", "fp-a") == nil)
	h.Advance(inFlight)
	is.True(begin(t, s, "u", "k2", "fp-a") == nil)

	// Abandoned keys run afresh.
	is.NoErr(s.AbandonIdempotent(ctx, "u", "k2", "fp-a"))
	is.True(begin(t, s, "u", "k2", "fp-c") == nil)
}

// A request whose in-flight record has expired, or been taken over by a
// later request with the key, must not write its answer or forget the
// key: finishing or abandoning changes only its own in-flight record.
func testIdempotencyLateFinish(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	body := []byte(`{"task_id":"t","status":"pending"}`)

	// Expired and gone: finishing writes nothing, the key is free.
	is.True(begin(t, s, "u", "gone", "fp-a") == nil)
	h.Advance(inFlight + time.Second)
	is.NoErr(s.FinishIdempotent(ctx, "u", "gone", "fp-a", 201, body, ttl))
	is.True(begin(t, s, "u", "gone", "fp-b") == nil) // no record with an empty or stale fingerprint was left

	// Never begun, or abandoned: finishing writes nothing.
	is.NoErr(s.FinishIdempotent(ctx, "u", "never", "fp-a", 201, body, ttl))
	is.True(begin(t, s, "u", "never", "fp-a") == nil)

	// Expired, then taken by a request with another body: the late
	// finish and abandon of the first leave the second's record alone.
	is.True(begin(t, s, "u", "taken", "fp-a") == nil)
	h.Advance(inFlight + time.Second)
	is.True(begin(t, s, "u", "taken", "fp-b") == nil)
	is.NoErr(s.FinishIdempotent(ctx, "u", "taken", "fp-a", 201, body, ttl))
	is.NoErr(s.AbandonIdempotent(ctx, "u", "taken", "fp-a"))
	rec := begin(t, s, "u", "taken", "fp-b")
	is.True(rec != nil)
	is.True(!rec.Done) // still the second request's, in flight
	is.Equal(rec.Fingerprint, "fp-b")
	is.NoErr(s.FinishIdempotent(ctx, "u", "taken", "fp-b", 422, []byte(`{}`), ttl))
	rec = begin(t, s, "u", "taken", "fp-b")
	is.True(rec != nil && rec.Done)
	is.Equal(rec.Status, 422)

	// A finished record is final: a second finish or an abandon with
	// the same fingerprint changes nothing.
	is.NoErr(s.FinishIdempotent(ctx, "u", "taken", "fp-b", 201, body, ttl))
	is.NoErr(s.AbandonIdempotent(ctx, "u", "taken", "fp-b"))
	rec = begin(t, s, "u", "taken", "fp-b")
	is.True(rec != nil && rec.Done)
	is.Equal(rec.Status, 422)
	is.Equal(string(rec.Body), `{}`)
}
