package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/wire"
)

// TestRotateWebhookSecret: POST /webhook-secret/rotate replaces the
// caller's secret, and only the caller's, and only for a caller with a
// key; the replaced secret still signs for the grace.
func TestRotateWebhookSecret(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	e := newEnv(t)
	bob := e.user("bob", 0)
	secretOf := func(key string) string {
		t.Helper()
		w := e.do("GET", "/api/v1/webhook-secret", key, "")
		is.Equal(w.Code, http.StatusOK)
		var ws httpapi.WebhookSecret
		is.NoErr(json.Unmarshal(w.Body.Bytes(), &ws))
		return ws.Secret
	}
	alices, bobs := secretOf(e.key), secretOf(bob)

	wantError(t, e.do("POST", "/api/v1/webhook-secret/rotate", "", ""), http.StatusUnauthorized, wire.APIUnauthorized)
	wantError(t, e.do("POST", "/api/v1/webhook-secret/rotate", imagegen.NewAPIKey(), ""), http.StatusUnauthorized, wire.APIUnauthorized)
	is.Equal(secretOf(e.key), alices) // nothing rotated without a key

	w := e.do("POST", "/api/v1/webhook-secret/rotate", e.key, "")
	is.Equal(w.Code, http.StatusOK)
	is.Equal(w.Header().Get("Cache-Control"), "no-store")
	var rot httpapi.WebhookSecretRotation
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &rot))
	is.True(rot.Secret != alices)
	is.True(rot.PreviousExpiresAt.Equal(e.clock.Now().Add(imagegen.DefaultWebhookSecretGrace)))
	is.Equal(secretOf(e.key), rot.Secret)
	signing, err := e.svc.WebhookSigningSecrets(ctx, "alice")
	is.NoErr(err)
	is.Equal(signing, []string{rot.Secret, alices})

	is.Equal(secretOf(bob), bobs) // another user's secret is not touched
	signing, err = e.svc.WebhookSigningSecrets(ctx, "bob")
	is.NoErr(err)
	is.Equal(signing, []string{bobs})
}

// TestRotateWebhookSecretCountsTowardsTheRateLimit: a rotation is a
// request like any other.
func TestRotateWebhookSecretCountsTowardsTheRateLimit(t *testing.T) {
	is := is.New(t)
	e := newEnv(t, func(o *envOptions) { o.limit = 2 })
	w := e.do("POST", "/api/v1/webhook-secret/rotate", e.key, "")
	is.Equal(w.Code, http.StatusOK)
	is.True(w.Header().Get("RateLimit") != "")
	is.Equal(e.do("GET", "/api/v1/credits", e.key, "").Code, http.StatusOK)
	wantError(t, e.do("GET", "/api/v1/credits", e.key, ""), http.StatusTooManyRequests, wire.APIRateLimitExceeded)
	wantError(t, e.do("POST", "/api/v1/webhook-secret/rotate", e.key, ""), http.StatusTooManyRequests, wire.APIRateLimitExceeded)
}
