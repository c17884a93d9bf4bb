package imagegen

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/imagegen/imagegen/fetch"
)

// WebhookDelivery is a finished task whose callback is due.
type WebhookDelivery struct {
	TaskID   string
	Owner    string
	URL      string // the task's callback_url
	Attempts int    // attempts made before this one
}

// WebhookStore keeps the callbacks of finished tasks until they are
// delivered. A store that implements it queues a task's delivery in the
// same atomic step that finishes a task with a callback_url, so no
// callback is lost to a crash; deliveries are leased like tasks, so one
// dispatcher at a time sends each.
type WebhookStore interface {
	// ClaimWebhooks leases up to n due deliveries: they are not due
	// again until lease has passed (unless acknowledged or retried).
	ClaimWebhooks(ctx context.Context, lease time.Duration, n int) ([]WebhookDelivery, error)
	// AckWebhook removes a delivery: it was delivered, or given up.
	AckWebhook(ctx context.Context, taskID string) error
	// RetryWebhook counts a failed attempt and makes the delivery due
	// again after delay.
	RetryWebhook(ctx context.Context, taskID string, delay time.Duration) error
}

// SecretStore keeps named secrets shared by every process on the store.
type SecretStore interface {
	// SharedSecret returns the secret stored under name, first storing
	// the one generate makes if there is none.
	SharedSecret(ctx context.Context, name string, generate func() []byte) ([]byte, error)
}

// WebhookSecretPrefix starts every webhook signing secret (the Standard
// Webhooks format: "whsec_" and the base64 of the key).
const WebhookSecretPrefix = "whsec_"

// WebhookSecret returns owner's webhook signing secret, making it on
// first use. Receivers verify callbacks with it (client.VerifyWebhook).
func (s *Service) WebhookSecret(ctx context.Context, owner string) (string, error) {
	ss, ok := s.cfg.Store.(SecretStore)
	if !ok {
		return "", errors.New("imagegen: the store cannot keep webhook secrets")
	}
	key, err := ss.SharedSecret(ctx, "webhook:"+owner, func() []byte {
		b := make([]byte, 32)
		_, _ = rand.Read(b) // crypto/rand.Read does not fail
		return b
	})
	if err != nil {
		return "", fmt.Errorf("imagegen: webhook secret: %w", err)
	}
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// checkCallback applies the service's rules to a valid callback_url (""
// for none): https, and not an address that is plainly not public (an IP
// literal that the SSRF guard of package fetch refuses, or a localhost
// name), so that such a callback is refused at submit instead of failing
// every delivery for an hour. Names that resolve to such addresses are
// refused at delivery, by the same guard.
// AllowHTTPCallbacks (development) allows both.
func (s *Service) checkCallback(raw string) error {
	if raw == "" || s.cfg.AllowHTTPCallbacks {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || !strings.EqualFold(u.Scheme, "https") {
		return invalid("callback_url", "must be an https URL")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return invalid("callback_url", "must be a public address (not localhost)")
	}
	if addr, err := netip.ParseAddr(host); err == nil && !fetch.AllowedAddr(addr) {
		return invalid("callback_url", "must be a public address (not %s)", addr.WithZone(""))
	}
	return nil
}
