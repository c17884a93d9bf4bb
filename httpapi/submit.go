package httpapi

import (
	"io"
	"mime"
	"net/http"

	"github.com/imagegen/imagegen"
)

// handleSubmit serves POST {prefix}/generate (docs/api.md, "Submit a task").
func (h *Handler) handleSubmit() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		if err := checkContentType(r); err != nil {
			h.respondErr(w, r, err)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			h.respondErr(w, r, err)
			return
		}
		req, err := imagegen.DecodeRequest(body)
		if err != nil {
			h.respondErr(w, r, err)
			return
		}
		sub, err := h.cfg.Service.Submit(r.Context(), p.Owner, req)
		if err != nil {
			h.respondErr(w, r, err)
			return
		}
		encode(w, http.StatusCreated, sub)
	})
}

// checkContentType refuses a request body declared as anything but JSON
// (a body without Content-Type is read as JSON).
func checkContentType(r *http.Request) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return &imagegen.ValidationError{Field: "Content-Type", Message: "must be application/json"}
		}
	}
	return nil
}
