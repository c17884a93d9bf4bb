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

// An owner that is not valid UTF-8 or holds NUL (the console takes it
// from a proxy's identity header, the CLI from its arguments) gets no
// key: a ValidationError on "owner", as Grant and SubmitWith answer,
// where the memory and Redis stores kept a key whose owner could never
// be granted credits and PostgreSQL failed with its encoding error.
func TestCreateKeyForAnOddOwnerIsInvalid(t *testing.T) {
	svc, err := imagegen.New(imagegen.Config{Store: testenv.Memory(t, memory.Config{}), Model: imagegentest.NewModel(1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, owner := range []string{"\x00", "a\x00b", "\xff", "a\xc0\x80"} {
		var ve *imagegen.ValidationError
		if _, _, err := svc.CreateKey(context.Background(), owner); !errors.As(err, &ve) || ve.Field != "owner" {
			t.Errorf("CreateKey(%q) = %v, want a ValidationError on owner", owner, err)
		}
		if _, err := svc.ImportKey(context.Background(), owner, imagegen.NewAPIKey()); !errors.As(err, &ve) || ve.Field != "owner" {
			t.Errorf("ImportKey(%q) = %v, want a ValidationError on owner", owner, err)
		}
		if ks, _ := svc.Keys(context.Background(), owner); len(ks) != 0 {
			t.Errorf("%q holds %d keys", owner, len(ks))
		}
	}
}
