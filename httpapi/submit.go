package httpapi

import (
	"io"
	"mime"
	"net/http"

	"github.com/imagegen/imagegen"
)

// handleSubmit serves POST {prefix}/generate (docs/api.md, "Submit a task").
func (h *Handler) handleSubmit() http.Handler {
	return userJSON(h, http.StatusCreated, func(w http.ResponseWriter, r *http.Request, owner string) (imagegen.Submitted, error) {
		if err := checkContentType(r); err != nil {
			return imagegen.Submitted{}, err
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			return imagegen.Submitted{}, err
		}
		req, err := imagegen.DecodeRequest(body)
		if err != nil {
			return imagegen.Submitted{}, err
		}
		return h.cfg.Service.Submit(r.Context(), owner, req)
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
