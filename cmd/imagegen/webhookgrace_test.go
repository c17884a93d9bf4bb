package main

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestServeWebhookSecretGraceFlag: a rotation through serve's API keeps
// the replaced secret signing for -webhook-secret-grace, not the
// library's default.
func TestServeWebhookSecretGraceFlag(t *testing.T) {
	is := is.New(t)
	const key = "test-demo-key-0123456789"
	s := startServe(t, nil, "-demo-key", key, "-workers", "0", "-webhook-secret-grace", "90m")

	before := time.Now()
	code, rot := s.call(t, "POST", "/api/v1/webhook-secret/rotate", key, "")
	after := time.Now()
	is.Equal(code, http.StatusOK)
	until, err := time.Parse(time.RFC3339Nano, rot["previous_expires_at"].(string))
	is.NoErr(err)
	// Stored to the millisecond: within the call's span, shifted by 90m.
	is.True(!until.Before(before.Add(90 * time.Minute).Truncate(time.Millisecond)))
	is.True(!until.After(after.Add(90 * time.Minute)))
	is.NoErr(s.stop())

	for _, bad := range []string{"0s", "-1h", "500ms"} {
		_, err := parseServe([]string{"-webhook-secret-grace", bad}, noEnv, io.Discard)
		is.True(err != nil) // refused, not taken as the default
	}
}
