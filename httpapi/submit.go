package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime"
	"net/http"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// handleSubmit serves POST {prefix}/generate (docs/api.md, "Submit a
// task"). The body is read once and handed, with the Idempotency-Key
// header, to Service.SubmitIdempotent, which decodes and validates it
// once, and only when the key is new (see the header's rules there):
// the same key with the same body answers the first answer again, with
// "Idempotent-Replayed: true".
func (h *Handler) handleSubmit() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		keys := r.Header.Values("Idempotency-Key")
		if len(keys) > 1 {
			h.respondErr(w, r, &imagegen.ValidationError{Field: "Idempotency-Key", Message: "must be given once"})
			return
		}
		if err := checkContentType(r); err != nil {
			h.respondErr(w, r, err)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			h.respondErr(w, r, err)
			return
		}
		var id imagegen.Idempotency
		if len(keys) == 1 {
			sum := sha256.Sum256(body)
			id = imagegen.Idempotency{Key: keys[0], Fingerprint: hex.EncodeToString(sum[:])}
			if id.Key == "" { // the client meant to send a key
				h.respondErr(w, r, &imagegen.ValidationError{Field: "Idempotency-Key", Message: "must be 1 to 255 printable ASCII characters"})
				return
			}
		}
		sub, replayed, err := h.cfg.Service.SubmitIdempotent(r.Context(), p.Owner, id, func() (imagegen.Request, error) {
			return wire.DecodeRequest(body)
		})
		if replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		if err != nil {
			h.respondErr(w, r, err)
			return
		}
		encode(w, http.StatusCreated, wire.Submitted(sub))
	})
}

// checkContentType refuses a request body declared as anything but JSON
// (a body without Content-Type is read as JSON).
func checkContentType(r *http.Request) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" { // the usual one, without parsing
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return &imagegen.ValidationError{Field: "Content-Type", Message: "must be application/json"}
		}
	}
	return nil
}
