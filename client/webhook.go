package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// Errors of webhook verification. They are package webhook's errors, so
// errors.Is matches either name.
var (
	// ErrWebhookSignature: no signature of the callback is right for its
	// body with this secret (a tampered body, or another secret).
	ErrWebhookSignature = wire.ErrInvalidSignature
	// ErrWebhookTimestamp: the callback's timestamp is further from now
	// than the tolerance (a replayed or delayed message), or malformed.
	ErrWebhookTimestamp = wire.ErrTimestamp
	// ErrWebhookHeaders: a webhook-id, webhook-timestamp or
	// webhook-signature header is missing.
	ErrWebhookHeaders = wire.ErrMissingHeaders
	// ErrWebhookSecret: the secret is not "whsec_" followed by base64.
	ErrWebhookSecret = wire.ErrBadSecret
)

// DefaultWebhookTolerance is how far a callback's timestamp may be from
// the receiver's clock.
const DefaultWebhookTolerance = wire.DefaultTolerance

// maxWebhookBody bounds the callback bodies Receive reads.
const maxWebhookBody = 1 << 20

// VerifyWebhook checks a callback (a task submitted with callback_url
// has ended) before its body is trusted: its signature is right for body
// with the user's secret (from WebhookSecret), and its timestamp is
// within DefaultWebhookTolerance of now. The error wraps
// ErrWebhookSignature, ErrWebhookTimestamp, ErrWebhookHeaders or
// ErrWebhookSecret. See WebhookVerifier.Receive for an http.Handler.
func VerifyWebhook(secret string, header http.Header, body []byte, now time.Time) error {
	return WebhookVerifier{Secret: secret}.Verify(header, body, now)
}

// WebhookVerifier checks the callbacks of one user, signed per the
// Standard Webhooks scheme (package webhook).
type WebhookVerifier struct {
	Secret    string         // "whsec_…", from Client.WebhookSecret
	Tolerance time.Duration  // 0 (or less): DefaultWebhookTolerance
	Clock     imagegen.Clock // Receive's clock; nil: imagegen.SystemClock
}

// Verify checks a callback's signature and timestamp; see VerifyWebhook.
func (v WebhookVerifier) Verify(header http.Header, body []byte, now time.Time) error {
	tolerance := v.Tolerance
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	if err := wire.Verify(v.Secret, header, body, now, tolerance); err != nil {
		return fmt.Errorf("client: verify callback: %w", err)
	}
	return nil
}

// Receive reads a callback request (its body, at most 1 MiB), verifies it
// and returns the task it carries, as GET /tasks/{id}?view=full shows it.
// A delivery may come more than once (it is retried until a receiver
// answers 2xx): handle each task id (and event, see WebhookEvent) once. Answer 2xx only once the task
// is safely handled, and 4xx to a callback that does not verify.
func (v WebhookVerifier) Receive(r *http.Request) (*Task, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody+1))
	if err != nil {
		return nil, fmt.Errorf("client: receive callback: %w", err)
	}
	if len(body) > maxWebhookBody {
		return nil, errors.New("client: receive callback: body over 1 MiB")
	}
	clock := v.Clock
	if clock == nil {
		clock = imagegen.SystemClock{}
	}
	if err := v.Verify(r.Header, body, clock.Now()); err != nil {
		return nil, err
	}
	var t Task
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, fmt.Errorf("client: receive callback: decoding the task: %w", err)
	}
	if t.TaskID == "" || t.Status == "" {
		return nil, errors.New("client: receive callback: the body is not a task")
	}
	return &t, nil
}

// WebhookSecret returns the caller's secret for verifying callbacks (GET
// /webhook-secret, an extension; the server makes it on first use). Keep
// it with the receiver, as you would the API key.
func (c *Client) WebhookSecret(ctx context.Context) (string, error) {
	res, err := c.call(ctx, http.MethodGet, "/webhook-secret", nil, nil)
	if err != nil {
		return "", fmt.Errorf("client: webhook secret: %w", err)
	}
	var body struct {
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(res.body, &body); err != nil {
		return "", fmt.Errorf("client: webhook secret: decoding the answer: %w", err)
	}
	if body.Secret == "" {
		return "", errors.New("client: webhook secret: the answer has no secret")
	}
	return body.Secret, nil
}

// RotateWebhookSecret replaces the caller's secret for verifying
// callbacks with a new one (POST /webhook-secret/rotate, an extension)
// and returns it, with the time until which callbacks are still signed
// with the secret it replaced too (imagegen.WebhookRotation). Give the
// new secret to the receiver before then: during that time each
// callback carries a signature for each secret, so a receiver with
// either verifies it. A failed call may have rotated all the same
// (WebhookSecret tells).
func (c *Client) RotateWebhookSecret(ctx context.Context) (imagegen.WebhookRotation, error) {
	res, err := c.call(ctx, http.MethodPost, "/webhook-secret/rotate", nil, nil)
	if err != nil {
		return imagegen.WebhookRotation{}, fmt.Errorf("client: rotate webhook secret: %w", err)
	}
	var body struct {
		Secret            string    `json:"secret"`
		PreviousExpiresAt time.Time `json:"previous_expires_at"`
	}
	if err := json.Unmarshal(res.body, &body); err != nil {
		return imagegen.WebhookRotation{}, fmt.Errorf("client: rotate webhook secret: decoding the answer: %w", err)
	}
	if body.Secret == "" || body.PreviousExpiresAt.IsZero() {
		return imagegen.WebhookRotation{}, errors.New("client: rotate webhook secret: the answer has no secret or no previous_expires_at")
	}
	return imagegen.WebhookRotation{Secret: body.Secret, PreviousExpiresAt: body.PreviousExpiresAt}, nil
}

// WebhookEvent is the task event a callback request reports:
// imagegen.EventProcessing for a task a worker has started (when it was
// submitted with callback_events asking for it), else
// imagegen.EventCompleted. It is read from the request's webhook-id
// (wire.MessageEvent: "msg_<task id>_processing" for processing), which
// the signature covers, not from its webhook-event header, which it does
// not: a delivery captured and replayed within the tolerance with that
// header changed still reports its own event. Call it on a request that
// Verify (or Receive) accepted.
func WebhookEvent(r *http.Request) imagegen.CallbackEvent {
	return wire.MessageEvent(r.Header.Get(wire.HeaderID))
}
