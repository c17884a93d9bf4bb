package httpapi_test

import (
	"context"
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

// TestIdempotencyBodyErrorsReplayed: a refusal that depends on the body
// alone (422) is replayed.
func TestIdempotencyBodyErrorsReplayed(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	bad := `{"scene":"text-to-image","prompt":"","aspect_ratio":"16:9"}`
	wantError(t, e.do("POST", "/api/v1/generate", e.key, bad, "Idempotency-Key", "v"), http.StatusUnprocessableEntity, wire.APIInvalidParams)
	w := e.do("POST", "/api/v1/generate", e.key, bad, "Idempotency-Key", "v")
	is.Equal(w.Code, http.StatusUnprocessableEntity)
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
