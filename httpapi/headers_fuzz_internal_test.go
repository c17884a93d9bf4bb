package httpapi

import (
	"net/http"
	"testing"
	"time"
)

// FuzzHeaderParsers: the parsers of Range, ETags, Prefer, Forwarded,
// X-Forwarded-For and request ids never panic, and planned ranges stay
// inside the image.
func FuzzHeaderParsers(f *testing.F) {
	f.Add("bytes=0-1,5-", "W/\"a\", \"b\"", "wait=5", "for=\"[::1]:80\";by=x", int64(100))
	f.Fuzz(func(t *testing.T, rng, etag, prefer, fwd string, size int64) {
		if size < 0 {
			size = -size
		}
		if size < 0 {
			return
		}
		rs, a := planRanges(rng, size)
		var total int64
		for _, r := range rs {
			if r.start < 0 || r.length <= 0 || r.end() > size {
				t.Fatalf("range %+v of %d from %q", r, size, rng)
			}
			total += r.length
		}
		if a == rangeParts && (total > size || len(rs) > MaxRanges) {
			t.Fatalf("%q: %d bytes in %d ranges of %d", rng, total, len(rs), size)
		}
		_ = matchETag(etag, `"abc"`, true)
		_ = matchETag(etag, `"abc"`, false)
		_, _, _ = scanETag(etag)
		_, _ = preferWait([]string{prefer})
		hd := http.Header{"Forwarded": {fwd}, "X-Forwarded-For": {fwd}, "If-Range": {etag}, "If-Match": {etag}}
		_ = forwardedFor(hd)
		_ = xForwardedFor(hd)
		_ = parseHost(fwd)
		r := &http.Request{Header: hd}
		_ = evalPreconditions(r, `"abc"`, time.Unix(1e9, 0))
		_ = rangeApplies(r, `"abc"`, time.Unix(1e9, 0))
		_ = validRequestID(prefer)
	})
}
