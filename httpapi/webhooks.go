package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/imagegen/imagegen"
)

// WebhookSecret is the body of GET {prefix}/webhook-secret.
type WebhookSecret struct {
	// Secret verifies the signatures of callbacks (Standard Webhooks).
	Secret string `json:"secret"`
}

// handleWebhookSecret serves GET {prefix}/webhook-secret: the user's
// secret for verifying callbacks (made on first use).
func (h *Handler) handleWebhookSecret() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		secret, err := h.cfg.Service.WebhookSecret(r.Context(), p.Owner)
		if err != nil {
			h.respondErr(w, r, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		encode(w, http.StatusOK, WebhookSecret{Secret: secret})
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
	body.TaskDetails = detailsOf(t, -1)
	return json.Marshal(body)
}
