package httpapi

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/imagegen/imagegen"
)

// TaskBody is the task as the API shows it (INTERFACE.md §2.3): images
// only on success, error only on failure, nothing else while pending or
// processing.
type TaskBody struct {
	TaskID string          `json:"task_id"`
	Status imagegen.Status `json:"status"`
	Images []string        `json:"images,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// handleTask serves GET {prefix}/tasks/{task_id} (INTERFACE.md §4.2).
func (h *Handler) handleTask() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		t, err := h.cfg.Service.Task(r.Context(), p.Owner, r.PathValue("task_id"))
		if err != nil {
			h.respondErr(w, r, err)
			return
		}
		encode(w, http.StatusOK, h.taskBody(r, t))
	})
}

func (h *Handler) taskBody(r *http.Request, t *imagegen.Task) TaskBody {
	body := TaskBody{TaskID: t.ID, Status: t.Status}
	switch t.Status {
	case imagegen.StatusSuccess:
		body.Images = make([]string, len(t.Images))
		for i, id := range t.Images {
			body.Images[i] = h.imageURL(r, id, t.ExpiresAt.Unix())
		}
	case imagegen.StatusFailed:
		body.Error = t.Error
		if body.Error == "" {
			body.Error = "image generation failed"
		}
	}
	return body
}

// imageURL is the absolute, signed, expiring URL of an image.
func (h *Handler) imageURL(r *http.Request, id string, expires int64) string {
	base := h.cfg.PublicURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	exp := strconv.FormatInt(expires, 10)
	return base + h.cfg.Prefix + "/images/" + url.PathEscape(id) + "?expires=" + exp + "&sig=" + h.signer.sign(id, expires)
}
