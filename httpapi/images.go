package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// handleImage serves GET {prefix}/images/{image_id}?expires=&sig=, the
// signed URLs of task bodies. It needs no API key: the signature is the
// credential, and it ends with the task's retention. A bad, expired or
// unknown URL is a plain 404.
//
// By default the bytes stream from the store's BlobStore (serveImage):
// ETag (the image's SHA-256), Last-Modified, Cache-Control until the
// image expires, conditional requests (304, 412), HEAD and Range
// requests (206, 416), every error in the API's JSON shape; nothing is
// copied whole into memory. The type served is the record's as
// imagegen.SafeImageType makes it, with nosniff and a sandboxing
// Content-Security-Policy; a record of another type is served as an
// application/octet-stream attachment, never redirected. With Config.ImageBaseURL or
// Config.PresignTTL the answer is a 302 to the CDN or to a fresh
// presigned object-store URL, so the bytes never pass through this
// process; the signed URL stays the stable one clients keep.
func (h *Handler) handleImage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("image_id")
		q := r.URL.Query()
		now := h.cfg.Clock.Now()
		if !h.signer.verify(id, q.Get("expires"), q.Get("sig"), now) {
			imageNotFound(w)
			return
		}
		if h.cfg.ImageBaseURL != "" || h.presigner != nil {
			h.redirectImage(w, r, id, now)
			return
		}
		img, err := h.cfg.Service.Image(r.Context(), id)
		if h.imageErr(w, r, err) {
			return
		}
		h.serveImage(w, r, img, now)
	})
}

// redirectImage answers 302 to the image at the CDN (ImageBaseURL) or
// at a presigned URL of the BlobStore. An image whose record's type is
// not a safe image type (imagegen.SafeImageType) is served from here
// instead, as an attachment (serveImage): the CDN or object store would
// serve the type its object was put with.
func (h *Handler) redirectImage(w http.ResponseWriter, r *http.Request, id string, now time.Time) {
	img, err := h.cfg.Service.Image(r.Context(), id)
	if h.imageErr(w, r, err) {
		return
	}
	if _, ok := imagegen.SafeImageType(img.ContentType); !ok {
		h.serveImage(w, r, img, now)
		return
	}
	target := h.cfg.ImageBaseURL + "/" + url.PathEscape(id)
	cache := cacheUntil(img.ExpiresAt, now)
	if h.cfg.ImageBaseURL == "" {
		// The presigned URL is a credential of its own: it must not
		// outlive the image (the signed URL ends with it). It lives
		// whole seconds, so an image with less than one left is gone.
		ttl := min(h.cfg.PresignTTL, img.ExpiresAt.Sub(now)).Truncate(time.Second)
		if ttl < time.Second {
			imageNotFound(w)
			return
		}
		if target, err = h.presigner.PresignGet(r.Context(), id, ttl); err != nil {
			h.respondErr(w, r, err)
			return
		}
		// A cached redirect must not outlive the presigned URL.
		cache = "private, max-age=" + strconv.FormatInt(int64(ttl/2/time.Second), 10)
	}
	w.Header().Set("Cache-Control", cache)
	http.Redirect(w, r, target, http.StatusFound)
}

// cacheUntil is the Cache-Control of an image that expires at expires:
// it never changes (its id is new for new bytes), until it is removed.
func cacheUntil(expires, now time.Time) string {
	maxAge := max(int64(expires.Sub(now)/time.Second), 0)
	return "private, max-age=" + strconv.FormatInt(maxAge, 10) + ", immutable"
}

// imageErr answers err, the failure of an image record's lookup, if
// any, and reports whether it did: a missing image is a plain 404; a
// store that failed or did not answer (the one that often holds the
// bytes too) is a 503 or 504 with Retry-After, as a download's store
// failure is (downloadErr).
func (h *Handler) imageErr(w http.ResponseWriter, r *http.Request, err error) bool {
	if err == nil {
		return false
	}
	h.downloadErr(w, r, err)
	return true
}

func imageNotFound(w http.ResponseWriter) {
	writeError(w, http.StatusNotFound, wire.APINotFound, "image not found or link expired")
}
