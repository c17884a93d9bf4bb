package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/imagegen/imagegen"
)

// handleImage serves GET {prefix}/images/{image_id}?expires=&sig=, the
// signed URLs of task bodies. It needs no API key: the signature is the
// credential, and it ends with the task's retention. A bad, expired or
// unknown URL is a plain 404.
func (h *Handler) handleImage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("image_id")
		q := r.URL.Query()
		now := h.cfg.Clock.Now()
		if !h.signer.verify(id, q.Get("expires"), q.Get("sig"), now) {
			writeError(w, http.StatusNotFound, imagegen.APINotFound, "image not found or link expired")
			return
		}
		img, err := h.cfg.Service.Image(r.Context(), id)
		if errors.Is(err, imagegen.ErrImageNotFound) {
			writeError(w, http.StatusNotFound, imagegen.APINotFound, "image not found or link expired")
			return
		}
		if err != nil {
			h.respondErr(w, r, err)
			return
		}
		hd := w.Header()
		hd.Set("Content-Type", img.ContentType)
		hd.Set("Content-Length", strconv.Itoa(len(img.Data)))
		hd.Set("X-Content-Type-Options", "nosniff")
		maxAge := max(int64(img.ExpiresAt.Sub(now)/time.Second), 0)
		hd.Set("Cache-Control", "private, max-age="+strconv.FormatInt(maxAge, 10)+", immutable")
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(img.Data)
		}
	})
}
