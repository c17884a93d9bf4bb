package imagegen

import (
	"fmt"
	"testing"
)

// The cache answers HashAPIKey's hash for every key, also when keys
// share a slot and push each other out.
func TestKeyHashesAreTheHashes(t *testing.T) {
	c := newKeyHashes()
	keys := make([]string, 3*len(c.slots)) // more keys than slots: every slot is shared
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%04d-0123456789abcdef", i)
	}
	keys = append(keys, "key-0000-0123456789abcdeF", "key-0000-0123456789abcde") // near misses of the first key
	for round := range 3 {
		for _, k := range keys {
			if got, want := c.of(k), HashAPIKey(k); got != want {
				t.Fatalf("round %d: hash of %q is %s, want %s", round, k, got, want)
			}
		}
	}
}

// A key's hash is made once while it keeps its slot.
func TestKeyHashesCacheAHash(t *testing.T) {
	c := newKeyHashes()
	c.of("bench-key-0123456789abcdef")
	if n := testing.AllocsPerRun(100, func() { c.of("bench-key-0123456789abcdef") }); n != 0 {
		t.Fatalf("%v allocations for a key seen before", n)
	}
}
