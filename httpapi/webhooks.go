package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// WebhookSecret is the body of GET {prefix}/webhook-secret.
type WebhookSecret struct {
	// Secret verifies the signatures of callbacks (Standard Webhooks).
	Secret string `json:"secret"`
}

// handleWebhookSecret serves GET {prefix}/webhook-secret: the user's
// secret for verifying callbacks (made on first use).
func (h *Handler) handleWebhookSecret() http.Handler {
	return userJSON(h, http.StatusOK, func(w http.ResponseWriter, r *http.Request, owner string) (WebhookSecret, error) {
		secret, err := h.cfg.Service.WebhookSecret(r.Context(), owner)
		if err != nil {
			return WebhookSecret{}, err
		}
		w.Header().Set("Cache-Control", "no-store")
		return WebhookSecret{Secret: secret}, nil
	})
}

// WebhookSecretRotation is the body of POST
// {prefix}/webhook-secret/rotate.
type WebhookSecretRotation struct {
	// Secret is the new secret: every callback is signed with it from now on.
	Secret string `json:"secret"`
	// PreviousExpiresAt is until when callbacks are signed with the
	// secret it replaced too (imagegen.Config.WebhookSecretGrace).
	PreviousExpiresAt time.Time `json:"previous_expires_at"`
}

// handleRotateWebhookSecret serves POST {prefix}/webhook-secret/rotate:
// a new secret for the user's callbacks, the previous one still signing
// them for the grace (imagegen.Service.RotateWebhookSecret). The
// request's body, if any, is not read.
func (h *Handler) handleRotateWebhookSecret() http.Handler {
	return userJSON(h, http.StatusOK, func(w http.ResponseWriter, r *http.Request, owner string) (WebhookSecretRotation, error) {
		rot, err := h.cfg.Service.RotateWebhookSecret(r.Context(), owner)
		if err != nil {
			return WebhookSecretRotation{}, err
		}
		w.Header().Set("Cache-Control", "no-store")
		return WebhookSecretRotation{Secret: rot.Secret, PreviousExpiresAt: wire.Time(rot.PreviousExpiresAt)}, nil
	})
}

// TaskJSON is the task as GET {prefix}/tasks/{id}?view=full shows it
// (without a queue position), for callbacks (webhook.Config.Render). It
// needs Config.PublicURL, since there is no request to take the host
// from.
func (h *Handler) TaskJSON(t *imagegen.Task) ([]byte, error) {
	if h.cfg.PublicURL == "" {
		return nil, errors.New("httpapi: Config.PublicURL is required to render callbacks")
	}
	body := h.taskBody(nil, t)
	body.TaskDetails = detailsOf(t, -1, time.Time{})
	return json.Marshal(body)
}
