package httpapi

import (
	"net/http"
	"testing"
)

// headerValue reads the map directly: the keys it is given must be the
// canonical ones net/http stores, or a header sent would go unread.
func TestHeaderValueKeysAreCanonical(t *testing.T) {
	for _, key := range []string{authorizationHeader, preferHeader, idempotencyKeyHeader, contentTypeHeader, RequestIDHeader} {
		if c := http.CanonicalHeaderKey(key); c != key {
			t.Errorf("%q is read as %q by net/http", key, c)
		}
		h := http.Header{}
		h.Add(key, "v1")
		h.Add(key, "v2")
		if got := headerValue(h, key); got != h.Get(key) {
			t.Errorf("headerValue(%q) = %q, Get says %q", key, got, h.Get(key))
		}
	}
	if got := headerValue(http.Header{}, authorizationHeader); got != "" {
		t.Errorf("headerValue of a missing header = %q", got)
	}
}
