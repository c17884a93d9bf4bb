package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// TestIdempotencyRefusalOfStateNotReplayed: a 403 insufficient_credits
// depends on the balance, not the body, so after a grant the same key and
// body run afresh instead of replaying the refusal.
func TestIdempotencyRefusalOfStateNotReplayed(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	poor := e.user("poor", 0)
	submit := func() *httptest.ResponseRecorder {
		return e.do("POST", "/api/v1/generate", poor, t2i, "Idempotency-Key", "k")
	}
	wantError(t, submit(), http.StatusForbidden, wire.APIInsufficientCredits)
	_, err := e.svc.Grant(context.Background(), "poor", 5, "top-up-1")
	is.NoErr(err)
	w := submit()
	is.Equal(w.Code, http.StatusCreated) // ran afresh
	is.Equal(w.Header().Get("Idempotent-Replayed"), "")
	again := submit()
	is.Equal(again.Code, http.StatusCreated)
	is.Equal(again.Header().Get("Idempotent-Replayed"), "true") // the success is kept
	is.Equal(again.Body.String(), w.Body.String())
}

// TestIdempotencyBodyErrorsNotKept: a refusal of the body (422) keeps no
// record of its key: the same body is validated and refused again, not
// replayed, and the key then takes the corrected body as a new request.
func TestIdempotencyBodyErrorsNotKept(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	bad := `{"scene":"text-to-image","prompt":"","aspect_ratio":"16:9"}`
	first := wantError(t, e.do("POST", "/api/v1/generate", e.key, bad, "Idempotency-Key", "v"), http.StatusUnprocessableEntity, wire.APIInvalidParams)
	w := e.do("POST", "/api/v1/generate", e.key, bad, "Idempotency-Key", "v")
	is.Equal(wantError(t, w, http.StatusUnprocessableEntity, wire.APIInvalidParams), first) // refused again, alike
	is.Equal(w.Header().Get("Idempotent-Replayed"), "")
	made := e.do("POST", "/api/v1/generate", e.key, t2i, "Idempotency-Key", "v")
	is.Equal(made.Code, http.StatusCreated) // not "already used with a different request body"
	is.Equal(made.Header().Get("Idempotent-Replayed"), "")
	again := e.do("POST", "/api/v1/generate", e.key, t2i, "Idempotency-Key", "v")
	is.Equal(again.Code, http.StatusCreated)
	is.Equal(again.Header().Get("Idempotent-Replayed"), "true")
	is.Equal(again.Body.String(), made.Body.String())
}

// TestIdempotencyEarlierRefusalReplayed: a refusal an earlier version
// kept for a key (status 422) is still replayed as a 422 until it
// expires, as a store may hold such records during and after an upgrade.
func TestIdempotencyEarlierRefusalReplayed(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	bad := `{"scene":"text-to-image","prompt":"","aspect_ratio":"16:9"}`
	sum := sha256.Sum256([]byte(bad))
	fp := hex.EncodeToString(sum[:])
	_, err := e.stack.Store.BeginIdempotent(context.Background(), "alice", "old", fp, "", time.Minute, time.Hour)
	is.NoErr(err)
	is.NoErr(e.stack.Store.FinishIdempotent(context.Background(), "alice", "old", fp, http.StatusUnprocessableEntity,
		[]byte(`{"field":"prompt","message":"is required","error":{"message":""}}`), time.Hour))
	w := e.do("POST", "/api/v1/generate", e.key, bad, "Idempotency-Key", "old")
	is.Equal(wantError(t, w, http.StatusUnprocessableEntity, wire.APIInvalidParams), "prompt: is required")
	is.Equal(w.Header().Get("Idempotent-Replayed"), "true")
}

// TestIdempotencyFollowsRetention: records are kept for the configured
// time, not a fixed 24 h.
func TestIdempotencyFollowsRetention(t *testing.T) {
	is := is.New(t)
	e := newEnv(t, func(o *envOptions) { o.service = func(c *imagegen.Config) { c.IdempotencyTTL = time.Hour } })
	submit := func() *httptest.ResponseRecorder {
		return e.do("POST", "/api/v1/generate", e.key, t2i, "Idempotency-Key", "short")
	}
	is.Equal(submit().Code, http.StatusCreated)
	e.clock.Advance(59 * time.Minute)
	is.Equal(submit().Header().Get("Idempotent-Replayed"), "true")
	e.clock.Advance(2 * time.Minute)
	w := submit()
	is.Equal(w.Code, http.StatusCreated)
	is.Equal(w.Header().Get("Idempotent-Replayed"), "") // expired: a new task
}
