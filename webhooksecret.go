package imagegen

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// WebhookSecretPrefix starts every webhook signing secret (the Standard
// Webhooks format: "whsec_" and the base64 of the key).
const WebhookSecretPrefix = "whsec_"

// DefaultWebhookSecretGrace is Config.WebhookSecretGrace when it is left
// zero: a day, as Standard Webhooks senders commonly give.
const DefaultWebhookSecretGrace = 24 * time.Hour

// WebhookRotation is what RotateWebhookSecret did.
type WebhookRotation struct {
	// Secret is the new secret: every delivery is signed with it from now on.
	Secret string
	// PreviousExpiresAt is when deliveries stop being signed with the
	// secret it replaced too (to the millisecond).
	PreviousExpiresAt time.Time
}

// WebhookSecret returns owner's webhook signing secret, making it on
// first use; after RotateWebhookSecret, the new one. Receivers verify
// callbacks with it (client.VerifyWebhook).
func (s *Service) WebhookSecret(ctx context.Context, owner string) (string, error) {
	_, keys, err := s.webhookKeys(ctx, owner)
	if err != nil {
		return "", fmt.Errorf("imagegen: webhook secret: %w", err)
	}
	return webhookSecret(keys.current), nil
}

// WebhookSigningSecrets returns the secrets a delivery of owner's is
// signed with now (a signature for each, in this order): the current
// one, and while the previous one's grace after a rotation lasts, the
// previous one too, so that a receiver that still has it verifies.
func (s *Service) WebhookSigningSecrets(ctx context.Context, owner string) ([]string, error) {
	_, keys, err := s.webhookKeys(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("imagegen: webhook signing secrets: %w", err)
	}
	secrets := []string{webhookSecret(keys.current)}
	if keys.previous != nil && s.cfg.Clock.Now().Before(keys.previousUntil) {
		secrets = append(secrets, webhookSecret(keys.previous))
	}
	return secrets, nil
}

// RotateWebhookSecret replaces owner's webhook signing secret with a new
// one. Deliveries are signed with both (the new one first) for
// Config.WebhookSecretGrace, then with the new one only, so a receiver
// can move to the new secret without failing a callback. Only the
// secret it replaces keeps a grace: one still in its grace from an
// earlier rotation stops signing at once.
//
// The swap is a compare-and-swap on the stored secret
// (SecretStore.ReplaceSharedSecret). Of two rotations of the same secret
// at once one rotates; the other rotates nothing and returns what the
// first did, so the two callers get the same new secret, and the secret
// both replaced keeps its grace (a second rotation would end it).
func (s *Service) RotateWebhookSecret(ctx context.Context, owner string) (WebhookRotation, error) {
	raw, keys, err := s.webhookKeys(ctx, owner)
	if err != nil {
		return WebhookRotation{}, fmt.Errorf("imagegen: rotate webhook secret: %w", err)
	}
	until := time.UnixMilli(s.cfg.Clock.Now().Add(s.cfg.WebhookSecretGrace).UnixMilli()).UTC()
	next := webhookKeys{current: NewSecretKey(), previous: keys.current, previousUntil: until}
	swapped, err := s.cfg.Store.ReplaceSharedSecret(ctx, webhookSecretName(owner), raw, next.encode())
	if err != nil {
		return WebhookRotation{}, fmt.Errorf("imagegen: rotate webhook secret: %w", err)
	}
	if !swapped {
		replaced := keys.current
		if _, next, err = s.webhookKeys(ctx, owner); err != nil {
			return WebhookRotation{}, fmt.Errorf("imagegen: rotate webhook secret: %w", err)
		}
		if bytes.Equal(next.current, replaced) {
			return WebhookRotation{}, errors.New("imagegen: rotate webhook secret: the store refused the swap but kept the secret")
		}
	}
	s.log.InfoContext(ctx, "webhook secret rotated", slog.String("owner", owner),
		slog.Bool("by_this_call", swapped), slog.Time("previous_expires_at", next.previousUntil))
	return WebhookRotation{Secret: webhookSecret(next.current), PreviousExpiresAt: next.previousUntil}, nil
}

func webhookSecretName(owner string) string { return "webhook:" + owner }

func webhookSecret(key []byte) string {
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// webhookKeys reads owner's webhook keys, making the first on first use;
// raw is the stored value, which a rotation replaces.
func (s *Service) webhookKeys(ctx context.Context, owner string) (raw []byte, keys webhookKeys, err error) {
	raw, err = s.cfg.Store.SharedSecret(ctx, webhookSecretName(owner), NewSecretKey)
	if err != nil {
		return nil, webhookKeys{}, err
	}
	keys, err = decodeWebhookKeys(raw)
	return raw, keys, err
}
