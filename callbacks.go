package imagegen

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/imagegen/imagegen/fetch"
)

// WebhookSecretPrefix starts every webhook signing secret (the Standard
// Webhooks format: "whsec_" and the base64 of the key).
const WebhookSecretPrefix = "whsec_"

// WebhookSecret returns owner's webhook signing secret, making it on
// first use. Receivers verify callbacks with it (client.VerifyWebhook).
func (s *Service) WebhookSecret(ctx context.Context, owner string) (string, error) {
	key, err := s.cfg.Store.SharedSecret(ctx, "webhook:"+owner, NewSecretKey)
	if err != nil {
		return "", fmt.Errorf("imagegen: webhook secret: %w", err)
	}
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// checkCallback applies the service's rules to a valid callback_url, as
// Request.validate parsed it (nil for none): https, and not an address
// that is plainly not public (an IP literal that the SSRF guard of
// package fetch refuses, or a localhost name), so that such a callback
// is refused at submit instead of failing every delivery for an hour.
// Names that resolve to such addresses are refused at delivery, by the
// same guard.
// AllowHTTPCallbacks (development) allows both.
func (s *Service) checkCallback(u *url.URL) error {
	if u == nil || s.cfg.AllowHTTPCallbacks {
		return nil
	}
	if !strings.EqualFold(u.Scheme, "https") {
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
