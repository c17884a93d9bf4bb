package wire

// Callback deliveries are signed per the Standard Webhooks scheme
// (https://www.standardwebhooks.com): package webhook signs them with
// Headers, receivers check them with Verify (client.VerifyWebhook).

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
)

// Header names of the Standard Webhooks scheme.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// HeaderEvent names the task event a callback delivery reports:
// "processing" (a worker started the task) or "completed" (it reached
// success or failed). The body is the task as it is when the delivery
// is sent.
const HeaderEvent = "webhook-event"

// Errors of Verify.
var (
	ErrBadSecret        = errors.New("webhook: secret must be whsec_ followed by base64")
	ErrMissingHeaders   = errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature")
	ErrTimestamp        = errors.New("webhook: timestamp too far from now")
	ErrInvalidSignature = errors.New("webhook: no valid signature")
)

// DefaultTolerance is how far a timestamp may be from the receiver's
// clock in Verify.
const DefaultTolerance = 5 * time.Minute

func key(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, imagegen.WebhookSecretPrefix)
	if !ok {
		return nil, ErrBadSecret
	}
	k, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(k) == 0 {
		return nil, ErrBadSecret
	}
	return k, nil
}

// Sign returns the webhook-signature value for a message.
func Sign(secret, id string, timestamp time.Time, body []byte) (string, error) {
	k, err := key(secret)
	if err != nil {
		return "", err
	}
	return "v1," + signature(k, id, timestamp.Unix(), body), nil
}

func signature(k []byte, id string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, k)
	mac.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Headers returns the three headers of a signed message.
func Headers(secret, id string, timestamp time.Time, body []byte) (http.Header, error) {
	return SignedHeaders([]string{secret}, id, timestamp, body)
}

// SignedHeaders returns the three headers of a message signed with each
// of secrets: the webhook-signature lists one signature per secret, in
// their order, space separated, as a sender does while a secret is being
// rotated (the new secret first, then the one it replaces), so that a
// receiver with either verifies. It needs at least one secret.
func SignedHeaders(secrets []string, id string, timestamp time.Time, body []byte) (http.Header, error) {
	if len(secrets) == 0 {
		return nil, ErrBadSecret
	}
	sigs := make([]string, len(secrets))
	for i, secret := range secrets {
		sig, err := Sign(secret, id, timestamp, body)
		if err != nil {
			return nil, err
		}
		sigs[i] = sig
	}
	sig := strings.Join(sigs, " ")
	h := http.Header{}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(timestamp.Unix(), 10))
	h.Set(HeaderSignature, sig)
	h.Set("Content-Type", "application/json")
	return h, nil
}

// Verify checks a received message: its timestamp is within tolerance of
// now, and one of its signatures (the header may list several, space
// separated, as during a secret rotation) is right for body. Compare in
// constant time.
func Verify(secret string, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	k, err := key(secret)
	if err != nil {
		return err
	}
	id, tsText, sigs := header.Get(HeaderID), header.Get(HeaderTimestamp), header.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrTimestamp, tsText)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return ErrTimestamp
	}
	want := []byte(signature(k, id, ts, body))
	for _, s := range strings.Fields(sigs) {
		v, sig, ok := strings.Cut(s, ",")
		if ok && v == "v1" && hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrInvalidSignature
}
