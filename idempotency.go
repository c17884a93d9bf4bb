package imagegen

// MaxIdempotencyKey is the longest idempotency key (the Idempotency-Key
// header of a submit), in bytes.
const MaxIdempotencyKey = 255

// ValidIdempotencyKey reports whether k is a usable idempotency key: 1
// to MaxIdempotencyKey printable ASCII characters, not starting or ending
// with a space (HTTP drops a header value's outer spaces, so such a key
// would not arrive as sent). The HTTP API refuses any other key, and the
// Go client sends none.
func ValidIdempotencyKey(k string) bool {
	if k == "" || len(k) > MaxIdempotencyKey || k[0] == ' ' || k[len(k)-1] == ' ' {
		return false
	}
	for i := range len(k) {
		if k[i] < ' ' || k[i] > '~' {
			return false
		}
	}
	return true
}
