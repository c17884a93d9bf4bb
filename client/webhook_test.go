package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/wire"
)

const (
	hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	hookBody   = `{"task_id":"3f0c","status":"success","images":["https://img.example.test/a.png"]}`
)

var hookSent = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// signed returns the headers the server sends with hookBody.
func signed(t *testing.T, secret string, at time.Time) http.Header {
	t.Helper()
	h, err := wire.Headers(secret, "msg_3f0c", at, []byte(hookBody))
	is.New(t).NoErr(err)
	return h
}

func TestVerifyWebhook(t *testing.T) {
	is := is.New(t)
	h := signed(t, hookSecret, hookSent)
	body := []byte(hookBody)
	is.NoErr(client.VerifyWebhook(hookSecret, h, body, hookSent))
	is.NoErr(client.VerifyWebhook(hookSecret, h, body, hookSent.Add(4*time.Minute)))

	tests := []struct {
		name   string
		secret string
		header http.Header
		body   string
		now    time.Time
		want   error
	}{
		{"tampered body", hookSecret, h, strings.Replace(hookBody, "success", "failed", 1), hookSent, client.ErrWebhookSignature},
		{"wrong secret", "whsec_c2VjcmV0LXNlY3JldA==", h, hookBody, hookSent, client.ErrWebhookSignature},
		{"stale", hookSecret, h, hookBody, hookSent.Add(client.DefaultWebhookTolerance + time.Second), client.ErrWebhookTimestamp},
		{"from the future", hookSecret, h, hookBody, hookSent.Add(-client.DefaultWebhookTolerance - time.Second), client.ErrWebhookTimestamp},
		{"no headers", hookSecret, http.Header{}, hookBody, hookSent, client.ErrWebhookHeaders},
		{"not a secret", "s3cret", h, hookBody, hookSent, client.ErrWebhookSecret},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			err := client.VerifyWebhook(tc.secret, tc.header, []byte(tc.body), tc.now)
			is.True(errors.Is(err, tc.want))
			is.True(strings.HasPrefix(err.Error(), "client: verify callback: "))
		})
	}
	// The sentinels are package webhook's.
	err := client.VerifyWebhook(hookSecret, h, []byte(hookBody+" "), hookSent)
	is.True(errors.Is(err, wire.ErrInvalidSignature))
}

func TestWebhookVerifierTolerance(t *testing.T) {
	is := is.New(t)
	h := signed(t, hookSecret, hookSent)
	late := hookSent.Add(9 * time.Minute)
	is.True(errors.Is(client.WebhookVerifier{Secret: hookSecret}.Verify(h, []byte(hookBody), late), client.ErrWebhookTimestamp))
	is.NoErr(client.WebhookVerifier{Secret: hookSecret, Tolerance: 10 * time.Minute}.Verify(h, []byte(hookBody), late))
	is.True(errors.Is(client.WebhookVerifier{Secret: hookSecret, Tolerance: time.Second}.Verify(h, []byte(hookBody), hookSent.Add(2*time.Second)), client.ErrWebhookTimestamp))
	is.NoErr(client.WebhookVerifier{Secret: hookSecret, Tolerance: -time.Second}.Verify(h, []byte(hookBody), hookSent.Add(time.Minute))) // the default
}

func TestWebhookVerifierReceive(t *testing.T) {
	clock := imagegentest.NewClock(hookSent.Add(time.Second))
	v := client.WebhookVerifier{Secret: hookSecret, Clock: clock}
	request := func(header http.Header, body string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/hooks/imagegen", strings.NewReader(body))
		r.Header = header
		return r
	}

	t.Run("verified", func(t *testing.T) {
		is := is.New(t)
		task, err := v.Receive(request(signed(t, hookSecret, hookSent), hookBody))
		is.NoErr(err)
		is.Equal(*task, client.Task{TaskID: "3f0c", Status: imagegen.StatusSuccess, Images: []string{"https://img.example.test/a.png"}})
	})
	t.Run("tampered", func(t *testing.T) {
		is := is.New(t)
		task, err := v.Receive(request(signed(t, hookSecret, hookSent), strings.Replace(hookBody, "a.png", "b.png", 1)))
		is.True(errors.Is(err, client.ErrWebhookSignature))
		is.True(task == nil)
	})
	t.Run("stale by the verifier's clock", func(t *testing.T) {
		is := is.New(t)
		old := client.WebhookVerifier{Secret: hookSecret, Clock: imagegentest.NewClock(hookSent.Add(time.Hour))}
		_, err := old.Receive(request(signed(t, hookSecret, hookSent), hookBody))
		is.True(errors.Is(err, client.ErrWebhookTimestamp))
	})
	t.Run("signed but not a task", func(t *testing.T) {
		is := is.New(t)
		h, err := wire.Headers(hookSecret, "msg_x", hookSent, []byte(`{"hello":1}`))
		is.NoErr(err)
		_, err = v.Receive(request(h, `{"hello":1}`))
		is.True(err != nil)
		is.True(!errors.Is(err, client.ErrWebhookSignature))
	})
	t.Run("too large", func(t *testing.T) {
		is := is.New(t)
		big := bytes.Repeat([]byte(" "), 1<<20+1)
		h, err := wire.Headers(hookSecret, "msg_x", hookSent, big)
		is.NoErr(err)
		_, err = v.Receive(request(h, string(big)))
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "1 MiB"))
	})
}

// The secret from the API verifies what the server would sign with it.
func TestWebhookSecret(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		ctx := context.Background()
		secret, err := e.client().WebhookSecret(ctx)
		is.NoErr(err)
		is.True(strings.HasPrefix(secret, imagegen.WebhookSecretPrefix))
		again, err := e.client().WebhookSecret(ctx)
		is.NoErr(err)
		is.Equal(again, secret) // made once, then kept
		server, err := e.svc.WebhookSecret(ctx, "alice")
		is.NoErr(err)
		is.Equal(server, secret)

		is.NoErr(client.VerifyWebhook(secret, signed(t, secret, hookSent), []byte(hookBody), hookSent))
		other, err := e.clientFor(e.base, e.user("bob", 0)).WebhookSecret(ctx)
		is.NoErr(err)
		is.True(other != secret) // per user
		is.True(errors.Is(client.VerifyWebhook(other, signed(t, secret, hookSent), []byte(hookBody), hookSent), client.ErrWebhookSignature))

		_, err = e.clientFor(e.base, "not-a-valid-key-at-all").WebhookSecret(ctx)
		is.True(errors.Is(err, imagegen.ErrUnauthorized))
	})
}

// RotateWebhookSecret replaces the caller's secret, and only the
// caller's; the server signs with both until the answer's time.
func TestRotateWebhookSecret(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		ctx := context.Background()
		old, err := e.client().WebhookSecret(ctx)
		is.NoErr(err)
		bob := e.clientFor(e.base, e.user("bob", 0))
		bobs, err := bob.WebhookSecret(ctx)
		is.NoErr(err)

		rot, err := e.client().RotateWebhookSecret(ctx)
		is.NoErr(err)
		is.True(strings.HasPrefix(rot.Secret, imagegen.WebhookSecretPrefix))
		is.True(rot.Secret != old)
		is.True(rot.PreviousExpiresAt.Equal(time.Now().Add(imagegen.DefaultWebhookSecretGrace).Truncate(time.Millisecond)))
		now, err := e.client().WebhookSecret(ctx)
		is.NoErr(err)
		is.Equal(now, rot.Secret)
		signing, err := e.svc.WebhookSigningSecrets(ctx, "alice")
		is.NoErr(err)
		is.Equal(signing, []string{rot.Secret, old})
		h, err := wire.SignedHeaders(signing, "msg_3f0c", hookSent, []byte(hookBody)) // as the server signs now
		is.NoErr(err)
		is.NoErr(client.VerifyWebhook(old, h, []byte(hookBody), hookSent))        // a receiver not yet moved
		is.NoErr(client.VerifyWebhook(rot.Secret, h, []byte(hookBody), hookSent)) // one already moved
		again, err := bob.WebhookSecret(ctx)
		is.NoErr(err)
		is.Equal(again, bobs) // another user's: untouched

		_, err = e.clientFor(e.base, "not-a-valid-key-at-all").RotateWebhookSecret(ctx)
		is.True(errors.Is(err, imagegen.ErrUnauthorized))
	})
}

// WebhookEvent reads the event from the signed webhook-id, not from the
// unsigned webhook-event header: a delivery that verifies keeps its own
// event when someone replays it with that header changed.
func TestWebhookEvent(t *testing.T) {
	is := is.New(t)
	secret := imagegen.WebhookSecretPrefix + "c2VjcmV0LWtleS1vZi10aGUtdGVzdA=="
	sent := time.Unix(1_700_000_000, 0)
	body := []byte(`{"task_id":"tsk_1","status":"success"}`)
	for _, c := range []struct {
		event  imagegen.CallbackEvent
		header string // the webhook-event header as replayed
	}{
		{imagegen.EventCompleted, ""}, // a server that sends only completed
		{imagegen.EventCompleted, "completed"},
		{imagegen.EventCompleted, "processing"},
		{imagegen.EventProcessing, "processing"},
		{imagegen.EventProcessing, "completed"},
		{imagegen.EventProcessing, ""},
	} {
		h, err := wire.Headers(secret, wire.MessageID("tsk_1", c.event), sent, body)
		is.NoErr(err)
		r := httptest.NewRequest("POST", "/hooks", nil)
		r.Header = h
		if c.header != "" {
			r.Header.Set(wire.HeaderEvent, c.header)
		}
		is.NoErr(client.VerifyWebhook(secret, r.Header, body, sent)) // the header is not signed: it verifies either way
		is.Equal(client.WebhookEvent(r), c.event)                    // so the event is the signed id's
	}
}
