package httpapi

import "net/http"

// The request headers the API reads on every request, in canonical form
// (as net/http stores the headers it parsed), for headerValue.
const (
	authorizationHeader  = "Authorization"
	preferHeader         = "Prefer"
	idempotencyKeyHeader = "Idempotency-Key"
	contentTypeHeader    = "Content-Type"
)

// headerValue is h.Get(key) for a key in canonical form: the map is
// read directly, without Get's check of the key's form on every request.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
