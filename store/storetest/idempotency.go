package storetest

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

// How long the idempotency tests hold a key in flight, and keep an answer.
const inFlight, ttl = time.Minute, 24 * time.Hour

// begin begins owner's request with key and fingerprint, naming no
// task, and returns the record the store already had (nil: the key is
// the caller's now).
func begin(t *testing.T, s imagegen.Store, owner, key, fingerprint string) *imagegen.IdempotencyRecord {
	t.Helper()
	return beginTask(t, s, owner, key, fingerprint, "")
}

// beginTask is begin of a request that asks for the task taskID.
func beginTask(t *testing.T, s imagegen.Store, owner, key, fingerprint, taskID string) *imagegen.IdempotencyRecord {
	t.Helper()
	rec, err := s.BeginIdempotent(ctx, owner, key, fingerprint, taskID, inFlight, ttl)
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

// An in-flight record that names its task is not taken over when its
// time runs out: its task may exist, and a request that took the key
// afresh would charge again. The next begin renews it as it was and
// returns it Expired, for the caller to settle; finishing or abandoning
// it under its fingerprint does. It is kept for the ttl, then goes.
func testIdempotencyExpiredInFlight(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	body := []byte(`{"task_id":"t1","status":"pending"}`)

	is.True(beginTask(t, s, "u", "k", "fp-a", "t1") == nil)
	rec := beginTask(t, s, "u", "k", "fp-a", "t2")
	is.True(rec != nil && !rec.Done && !rec.Expired) // live: in flight
	is.Equal(rec.TaskID, "t1")

	h.Advance(inFlight + time.Second)
	rec = beginTask(t, s, "u", "k", "fp-b", "t3")
	is.True(rec != nil)
	is.True(rec.Expired && !rec.Done)
	is.Equal(rec.Fingerprint, "fp-a") // the earlier request's, not this one's
	is.Equal(rec.TaskID, "t1")
	rec = beginTask(t, s, "u", "k", "fp-a", "t4") // renewed: in flight again
	is.True(rec != nil && !rec.Expired && !rec.Done)
	is.Equal(rec.TaskID, "t1")

	// Settled under the earlier fingerprint: its answer is kept.
	is.NoErr(s.FinishIdempotent(ctx, "u", "k", "fp-a", 201, body, ttl))
	rec = beginTask(t, s, "u", "k", "fp-a", "t5")
	is.True(rec != nil && rec.Done && !rec.Expired)
	is.Equal(string(rec.Body), string(body))

	// Or abandoned: the key is free.
	is.True(beginTask(t, s, "u", "k2", "fp-a", "t6") == nil)
	h.Advance(inFlight + time.Second)
	rec = beginTask(t, s, "u", "k2", "fp-b", "t7")
	is.True(rec != nil && rec.Expired)
	is.NoErr(s.AbandonIdempotent(ctx, "u", "k2", "fp-a"))
	is.True(beginTask(t, s, "u", "k2", "fp-b", "t8") == nil)
	rec = beginTask(t, s, "u", "k2", "fp-b", "t9")
	is.True(rec != nil && !rec.Expired)
	is.Equal(rec.TaskID, "t8")

	// Left unsettled, it is kept for the ttl, then the key is free.
	is.True(beginTask(t, s, "u", "k3", "fp-a", "t10") == nil)
	h.Advance(ttl - time.Second)
	rec = beginTask(t, s, "u", "k3", "fp-a", "t11")
	is.True(rec != nil && rec.Expired)
	h.Advance(ttl + time.Second) // the renewal kept it a ttl more
	is.True(beginTask(t, s, "u", "k3", "fp-a", "t12") == nil)
}
