package memory

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
)

// TestUUIDKey: the canonical text of a UUID gives its bytes; any other
// text (upper case, braces, a stray character) gives none, so it is
// kept as a string and two ids never share a key.
func TestUUIDKey(t *testing.T) {
	for range 100 {
		id := imagegen.NewOwnedID("u")
		got, ok := uuidKey(id)
		if !ok || got != [16]byte(uuid.MustParse(id)) {
			t.Fatalf("uuidKey(%s) = %x, %v", id, got, ok)
		}
	}
	id := imagegen.NewOwnedID("u")
	for _, other := range []string{
		strings.ToUpper(id), "{" + id[:34] + "}", id[:35] + "g", id[:8] + "x" + id[9:], id[:35], id + "0", "",
		"0123456789abcdef0123456789abcdef0123", // 36 hex digits, no hyphens
	} {
		if _, ok := uuidKey(other); ok {
			t.Errorf("uuidKey(%q) took it for a UUID", other)
		}
	}
}

// TestTaskIndexKeepsIDsApart: a UUID and its upper-case text are two
// ids; deleting one leaves the other.
func TestTaskIndexKeepsIDsApart(t *testing.T) {
	x := newTaskIndex()
	id := imagegen.NewOwnedID("u")
	x.put(keyOf(id), 1)
	x.put(keyOf(strings.ToUpper(id)), 2)
	x.put(keyOf("plain"), 3)
	if i, ok := x.get(id); !ok || i != 1 {
		t.Fatalf("get(%s) = %d, %v", id, i, ok)
	}
	if i, ok := x.get(strings.ToUpper(id)); !ok || i != 2 {
		t.Fatalf("get(upper) = %d, %v", i, ok)
	}
	x.delete(id)
	if _, ok := x.get(id); ok || x.len() != 2 {
		t.Fatalf("after delete: found %v, len %d", ok, x.len())
	}
	if i, ok := x.get(strings.ToUpper(id)); !ok || i != 2 {
		t.Fatalf("get(upper) after deleting the lower = %d, %v", i, ok)
	}
}
