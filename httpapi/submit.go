package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"net/http"
	"sync"

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
		keys := r.Header[idempotencyKeyHeader] // Values, without canonicalizing the key
		if len(keys) > 1 {
			h.respondErr(w, r, &imagegen.ValidationError{Field: "Idempotency-Key", Message: "must be given once"})
			return
		}
		if err := checkContentType(r); err != nil {
			h.respondErr(w, r, err)
			return
		}
		buf := bodyBuffers.Get().(*[]byte)
		defer putBodyBuffer(buf)
		body, err := readBody(w, r, (*buf)[:0])
		*buf = body
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
	if ct := headerValue(r.Header, contentTypeHeader); ct != "" && ct != "application/json" { // the usual one, without parsing
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return &imagegen.ValidationError{Field: "Content-Type", Message: "must be application/json"}
		}
	}
	return nil
}

// bodyBuffers keeps the buffers submit bodies are read into. Nothing
// keeps a body after its request: the decoder copies the strings it
// takes, the idempotency fingerprint is a hash of it.
var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxKeptBody is the largest body buffer kept for reuse.
const maxKeptBody = 64 << 10

func putBodyBuffer(b *[]byte) {
	if cap(*b) <= maxKeptBody {
		bodyBuffers.Put(b)
	}
}

// readBody reads r's body, at most MaxBodyBytes (beyond it, the error
// of http.MaxBytesReader, as io.ReadAll returned it), appending to buf.
// A body that cannot be read whole is errUnreadableBody.
func readBody(w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // room for more
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, unreadable(err)
		}
	}
}

// errUnreadableBody refuses a body that could not be read whole: the
// client hung up before its Content-Length, broke its chunked framing,
// or sent it slower than the server's ReadTimeout. Only the client's
// side of the connection fails a body's read, so it is a 422 like any
// other body that is not one JSON object, never a server error.
var errUnreadableBody = &imagegen.ValidationError{Message: "request body could not be read whole (it ended early, its chunked framing was broken, or it came too slowly)"}

// unreadable is the error of a body's read: nil and a
// *http.MaxBytesError (413) as they are, anything else errUnreadableBody.
func unreadable(err error) error {
	var tooBig *http.MaxBytesError
	if err == nil || errors.As(err, &tooBig) {
		return err
	}
	return errUnreadableBody
}
