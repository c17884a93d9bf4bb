package imagegen_test

import (
	"strings"
	"testing"

	"github.com/imagegen/imagegen"
)

// One rule for idempotency keys, on both sides of the wire.
func TestValidIdempotencyKey(t *testing.T) {
	for k, want := range map[string]bool{
		"order-7":          true,
		"a":                true,
		"with inner space": true,
		strings.Repeat("k", imagegen.MaxIdempotencyKey): true,
		"": false,
		strings.Repeat("k", imagegen.MaxIdempotencyKey+1): false,
		" leading":    false,
		"trailing ":   false,
		"tab\tinside": false,
		"newline\n":   false,
		"ünïcode":     false,
		"del\x7f":     false,
	} {
		if got := imagegen.ValidIdempotencyKey(k); got != want {
			t.Errorf("ValidIdempotencyKey(%q) = %v, want %v", k, got, want)
		}
	}
}
