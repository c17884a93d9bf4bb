package imagegen_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

// pickyKeys is the memory store that refuses, as PostgreSQL does, a key
// id that is not valid UTF-8 or holds NUL: an error, not "not found".
type pickyKeys struct{ *memory.Store }

func (s pickyKeys) RevokeKey(ctx context.Context, owner, id string) error {
	if !utf8.ValidString(id) || strings.IndexByte(id, 0) >= 0 {
		return errors.New(`invalid byte sequence for encoding "UTF8"`)
	}
	return s.Store.RevokeKey(ctx, owner, id)
}

// A key id that is not valid UTF-8 or holds NUL (the console's
// POST /keys/{id}/revoke takes it from the path) names no key:
// ErrKeyNotFound, never the store's error.
func TestRevokeKeyWithAnOddIDIsNotFound(t *testing.T) {
	svc, err := imagegen.New(imagegen.Config{Store: pickyKeys{testenv.Memory(t, memory.Config{})}, Model: imagegentest.NewModel(1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"\x00", "a\x00b", "\xff", "a\xc0\x80"} {
		if err := svc.RevokeKey(context.Background(), "alice", id); !errors.Is(err, imagegen.ErrKeyNotFound) {
			t.Errorf("RevokeKey(%q) = %v, want ErrKeyNotFound", id, err)
		}
	}
}
