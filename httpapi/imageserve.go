package httpapi

import (
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// copyBufSize is the buffer one download copies through: with the one
// chunk a store's reader holds, what a download keeps in memory.
const copyBufSize = 32 << 10

// storeRetryAfter is the Retry-After of a download the store failed.
const storeRetryAfter = 5 * time.Second

// imageCSP is the Content-Security-Policy of image answers: opened
// as a page, an image runs nothing and loads nothing (inline style
// only, which browsers' own image pages use), in a sandbox of an
// origin of its own.
const imageCSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"

// servedType is the Content-Type that img is served with: its type as
// imagegen.SafeImageType makes it, or application/octet-stream, as an
// attachment, for a record whose type is not a safe image type (one
// written before the worker checked types). It is never a type a
// browser would open as a page of the image's origin.
func (h *Handler) servedType(r *http.Request, img *imagegen.Image) (ct string, attachment bool) {
	if ct, ok := imagegen.SafeImageType(img.ContentType); ok {
		return ct, false
	}
	h.cfg.Logger.WarnContext(r.Context(), "image record of a type that is not an image's: served as an attachment",
		"image_id", img.ID, "content_type", img.ContentType)
	return "application/octet-stream", true
}

// serveImage answers a GET or HEAD of img with its bytes from the
// BlobStore. Preconditions come first (412, 304), then Range (RFC 9110):
// at most MaxRanges ranges, merged and sorted, each read from the store
// in one call of exactly its bytes; anything more is the whole image in
// one read. The first bytes are read before the status is written, so a
// store that fails or does not answer gets a JSON error; a store that
// fails later breaks the connection off (the client sees a short body,
// never a complete-looking wrong one).
func (h *Handler) serveImage(w http.ResponseWriter, r *http.Request, img *imagegen.Image, now time.Time) {
	etag, modified := imageValidators(img)
	hd := w.Header()
	validators := func() {
		hd.Set("Cache-Control", cacheUntil(img.ExpiresAt, now))
		if etag != "" {
			hd.Set("ETag", etag)
		}
		if !modified.IsZero() {
			hd.Set("Last-Modified", modified.UTC().Format(http.TimeFormat))
		}
	}
	switch evalPreconditions(r, etag, modified) {
	case precondFailed:
		writeError(w, http.StatusPreconditionFailed, wire.APIPreconditionFailed, "the image does not match If-Match or If-Unmodified-Since")
		return
	case precondNotModified:
		validators()
		w.WriteHeader(http.StatusNotModified)
		return
	}
	ranges, answer := []byteRange{{0, img.Size}}, rangeWhole
	if rh := r.Header.Get("Range"); rh != "" && rangeApplies(r, etag, modified) {
		if asked, a := planRanges(rh, img.Size); a != rangeWhole {
			ranges, answer = asked, a
		}
	}
	size := strconv.FormatInt(img.Size, 10)
	if answer == rangeUnsatisfiable {
		hd.Set("Content-Range", "bytes */"+size)
		writeError(w, http.StatusRequestedRangeNotSatisfiable, wire.APIRangeNotSatisfiable,
			"no range of the Range header overlaps the image's "+size+" bytes")
		return
	}

	head := r.Method == http.MethodHead
	if !h.enterStore() {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, wire.APIStorageUnavailable,
			"too many downloads are waiting for the image store; try again shortly")
		return
	}
	buf := make([]byte, copyBufSize)
	first, err := h.openPart(r.Context(), img, ranges[0], head, buf)
	h.storeWaits.Add(-1)
	if err != nil {
		h.downloadErr(w, r, err)
		return
	}
	defer first.Close()
	validators()
	hd.Set("Accept-Ranges", "bytes")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", imageCSP)
	ct, attachment := h.servedType(r, img)
	if attachment {
		hd.Set("Content-Disposition", "attachment")
	}
	if answer == rangeWhole || len(ranges) == 1 {
		hd.Set("Content-Type", ct)
		hd.Set("Content-Length", strconv.FormatInt(ranges[0].length, 10))
		status := http.StatusOK
		if answer == rangeParts {
			hd.Set("Content-Range", ranges[0].contentRange(img.Size))
			status = http.StatusPartialContent
		}
		w.WriteHeader(status)
		if !head {
			h.sendPart(w, r, first, buf)
		}
		return
	}
	h.sendParts(w, r, img, ct, ranges, first, buf)
}

// sendParts writes a multipart/byteranges answer of ranges, each part
// of type ct, the first of them open as first (its caller closes it).
// Each later range is read from the store when its turn comes.
func (h *Handler) sendParts(w http.ResponseWriter, r *http.Request, img *imagegen.Image, ct string, ranges []byteRange, first *part, buf []byte) {
	mw := multipart.NewWriter(w)
	hd := w.Header()
	hd.Set("Content-Type", "multipart/byteranges; boundary="+mw.Boundary())
	hd.Set("Content-Length", strconv.FormatInt(multipartLength(ranges, img.Size, ct, mw.Boundary()), 10))
	w.WriteHeader(http.StatusPartialContent)
	if r.Method == http.MethodHead {
		return
	}
	for i, rg := range ranges {
		if _, err := mw.CreatePart(partHeader(rg, img.Size, ct)); err != nil {
			return // the client went away
		}
		var ok bool
		if i == 0 {
			ok = h.sendPart(w, r, first, buf)
		} else {
			ok = h.sendLaterPart(w, r, img, rg, buf)
		}
		if !ok {
			return
		}
	}
	_ = mw.Close()
}

// sendLaterPart reads rg from the store and writes it (see sendPart).
func (h *Handler) sendLaterPart(w http.ResponseWriter, r *http.Request, img *imagegen.Image, rg byteRange, buf []byte) bool {
	h.storeWaits.Add(1)
	p, err := h.openPart(r.Context(), img, rg, false, buf)
	h.storeWaits.Add(-1)
	if err != nil {
		h.abortDownload(r, err)
	}
	defer p.Close()
	return h.sendPart(w, r, p, buf)
}

// multipartLength is the byte count of the multipart answer of ranges
// of an image of size bytes, parts of type ct, with boundary, worked out
// by writing its framing to a counter.
func multipartLength(ranges []byteRange, size int64, ct, boundary string) int64 {
	var c countingWriter
	mw := multipart.NewWriter(&c)
	_ = mw.SetBoundary(boundary)
	for _, rg := range ranges {
		_, _ = mw.CreatePart(partHeader(rg, size, ct))
		c += countingWriter(rg.length)
	}
	_ = mw.Close()
	return int64(c)
}

// partHeader is the header of rg's part of an image of size bytes
// served as type ct.
func partHeader(rg byteRange, size int64, ct string) textproto.MIMEHeader {
	return textproto.MIMEHeader{
		"Content-Range": {rg.contentRange(size)},
		"Content-Type":  {ct},
	}
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// part is one range of an image being read from the store: its first
// bytes already read (so the store has answered), the rest to come.
type part struct {
	rd    io.ReadCloser
	first []byte
	left  int64 // bytes after first
}

func (p *part) Close() error { return p.rd.Close() }

// openPart starts reading rg of img from the store and reads its first
// bytes into buf (none for a HEAD, which only checks that the bytes are
// there).
func (h *Handler) openPart(ctx context.Context, img *imagegen.Image, rg byteRange, head bool, buf []byte) (*part, error) {
	n := rg.length
	if head {
		n = 0
	}
	rd, err := h.cfg.Service.ReadImage(ctx, img, rg.start, n)
	if err != nil {
		return nil, err
	}
	k, err := io.ReadFull(rd, buf[:min(int64(len(buf)), n)])
	if err != nil {
		_ = rd.Close()
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the store had fewer bytes than its record says
		}
		return nil, err
	}
	return &part{rd: rd, first: buf[:k], left: n - int64(k)}, nil
}

// sendPart writes p's bytes to w, through buf (whose start holds p's
// first bytes). It reports whether the client took them all; a store
// that fails meanwhile aborts the answer.
func (h *Handler) sendPart(w http.ResponseWriter, r *http.Request, p *part, buf []byte) bool {
	if _, err := w.Write(p.first); err != nil {
		return false
	}
	for p.left > 0 {
		h.storeWaits.Add(1)
		k, err := p.rd.Read(buf[:min(int64(len(buf)), p.left)])
		h.storeWaits.Add(-1)
		if k > 0 {
			p.left -= int64(k)
			if _, werr := w.Write(buf[:k]); werr != nil {
				return false
			}
			continue
		}
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		h.abortDownload(r, err)
	}
	return true
}

// abortDownload breaks off an answer whose status is already sent: the
// server closes the connection (HTTP/1) or resets the stream (HTTP/2),
// so the client cannot take a short body for the image.
func (h *Handler) abortDownload(r *http.Request, err error) {
	if callerGone(r) { // the hang-up cut the read short: nobody to tell, nothing failed
		panic(http.ErrAbortHandler)
	}
	h.cfg.Logger.WarnContext(r.Context(), "image download broken off: the store failed after the answer began",
		"path", r.URL.Path, "err", err)
	panic(http.ErrAbortHandler)
}

// enterStore counts a download that is about to wait for the BlobStore,
// unless Config.MaxStoreWaits are waiting already.
func (h *Handler) enterStore() bool {
	if n := h.storeWaits.Add(1); h.cfg.MaxStoreWaits > 0 && n > int64(h.cfg.MaxStoreWaits) {
		h.storeWaits.Add(-1)
		return false
	}
	return true
}

// downloadErr answers a store error met before the status was sent: 404
// for bytes that are gone, 504 when the store did not answer in time and
// 503 when it failed (both with Retry-After); 499, unlogged, when the
// client hung up while it waited.
func (h *Handler) downloadErr(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, imagegen.ErrImageNotFound), errors.Is(err, imagegen.ErrBlobNotFound):
		imageNotFound(w)
	case errors.Is(err, imagegen.ErrBlobSize), errors.Is(err, io.ErrUnexpectedEOF):
		h.respondErr(w, r, err) // the bytes do not match their record: a 500, logged
	case storeTimedOut(err):
		h.cfg.Logger.WarnContext(r.Context(), "image store did not answer in time", "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", strconv.FormatInt(RetryAfterSeconds(storeRetryAfter), 10))
		writeError(w, http.StatusGatewayTimeout, wire.APIStorageTimeout, "the image store did not answer in time; try again later")
	case callerGone(r): // the hang-up cut the store call short: not the store's failure
		w.WriteHeader(statusClientClosed)
	default:
		h.cfg.Logger.WarnContext(r.Context(), "image store failed", "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", strconv.FormatInt(RetryAfterSeconds(storeRetryAfter), 10))
		writeError(w, http.StatusServiceUnavailable, wire.APIStorageUnavailable, "the image store is unavailable; try again later")
	}
}

// imageValidators are img's ETag (its SHA-256, quoted) and Last-Modified
// (when its task ended); either may be unknown ("", zero) on records
// written before they were kept.
func imageValidators(img *imagegen.Image) (etag string, modified time.Time) {
	if img.Checksum != "" {
		etag = `"` + img.Checksum + `"`
	}
	return etag, img.CreatedAt
}

// storeTimedOut reports whether err is a store that did not answer in
// time: a blob call past Config.BlobTimeout, a deadline, or a network
// timeout from the store's client (go-redis's and pgx's "i/o timeout").
func storeTimedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, imagegen.ErrBlobTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.As(err, &ne) && ne.Timeout()
}
