package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"time"

	"github.com/imagegen/imagegen"
)

// Idempotency keys of submit requests.
const (
	MaxIdempotencyKey = imagegen.MaxIdempotencyKey // bytes
	// DefaultIdempotencyTTL is Config.IdempotencyTTL when it is left zero.
	DefaultIdempotencyTTL = 24 * time.Hour
	// MaxIdempotentBody is the largest response kept for replay; a larger
	// one is not kept (a retry runs afresh). Submit answers are a few
	// hundred bytes, so each record is bounded by this plus the key.
	MaxIdempotentBody   = 16 << 10
	idempotencyInFlight = 2 * time.Minute
)

// idempotent makes POST {prefix}/generate idempotent under the
// Idempotency-Key header: the same key (per user) with the same body
// replays the first response (status and body, with
// "Idempotent-Replayed: true") and charges nothing more; with another
// body it is refused (422); while the first request is still running it
// is refused (409). Only answers that depend on the body alone are kept
// (see replayable): a refusal that depends on other state, such as 403
// insufficient_credits before a top-up, or a server error, is forgotten,
// so a retry runs afresh. Records are kept for Config.IdempotencyTTL and
// hold at most MaxIdempotentBody bytes of response. Without the header
// nothing changes; an empty, over-long or repeated header is refused
// (422).
func (h *Handler) idempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys := r.Header.Values("Idempotency-Key")
		if len(keys) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		key := keys[0]
		switch {
		case len(keys) > 1:
			h.respondErr(w, r, &imagegen.ValidationError{Field: "Idempotency-Key", Message: "must be given once"})
			return
		case !imagegen.ValidIdempotencyKey(key): // an empty one too: the client meant to send a key
			h.respondErr(w, r, &imagegen.ValidationError{Field: "Idempotency-Key", Message: "must be 1 to 255 printable ASCII characters"})
			return
		}
		// The fingerprint covers the body only, so a refusal that depends
		// on anything else must not be kept and replayed.
		if err := checkContentType(r); err != nil {
			h.respondErr(w, r, err)
			return
		}
		store := h.cfg.Service.Store()
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			h.respondErr(w, r, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sum := sha256.Sum256(body)
		fingerprint := hex.EncodeToString(sum[:])

		p, _ := PrincipalFrom(r.Context())
		rec, err := store.BeginIdempotent(r.Context(), p.Owner, key, fingerprint, idempotencyInFlight)
		switch {
		case err != nil:
			h.respondErr(w, r, err)
		case rec == nil:
			rw := &capture{ResponseWriter: w, status: http.StatusOK}
			next.ServeHTTP(rw, r)
			ctx := context.WithoutCancel(r.Context())
			if replayable(rw.status) && rw.body.Len() <= MaxIdempotentBody {
				err = store.FinishIdempotent(ctx, p.Owner, key, fingerprint, rw.status, rw.body.Bytes(), h.cfg.IdempotencyTTL)
			} else {
				err = store.AbandonIdempotent(ctx, p.Owner, key, fingerprint)
			}
			if err != nil {
				h.cfg.Logger.ErrorContext(ctx, "record idempotent response", "err", err)
			}
		case rec.Fingerprint != fingerprint:
			h.respondErr(w, r, &imagegen.ValidationError{Field: "Idempotency-Key", Message: "was already used with a different request body"})
		case !rec.Done:
			writeError(w, http.StatusConflict, imagegen.APIIdempotencyKeyInUse, "a request with this Idempotency-Key is still in progress; retry later")
		default:
			hdr := w.Header()
			hdr["Content-Type"] = jsonContentType
			hdr["X-Content-Type-Options"] = nosniff
			hdr.Set("Idempotent-Replayed", "true")
			w.WriteHeader(rec.Status)
			_, _ = w.Write(rec.Body)
		}
	})
}

// replayable reports whether a submit answer with status depends on the
// request body alone, so that replaying it for the same body is right: a
// success, or a refusal of the body itself (400 malformed, 413 too large,
// 415 wrong type, 422 invalid). Refusals that depend on the caller's
// state or the server's (401, 403 insufficient credits, 404, 409, 429,
// 5xx) are not kept.
func replayable(status int) bool {
	switch {
	case status >= 200 && status < 300:
		return true
	case status == http.StatusBadRequest, status == http.StatusRequestEntityTooLarge,
		status == http.StatusUnsupportedMediaType, status == http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// capture passes a response through and keeps its status and body.
type capture struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *capture) WriteHeader(status int) {
	c.status = status
	c.ResponseWriter.WriteHeader(status)
}

func (c *capture) Write(b []byte) (int, error) {
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}
