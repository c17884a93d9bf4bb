package imagegen_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

func TestAPIKeyFormat(t *testing.T) {
	is := is.New(t)
	k1, k2 := imagegen.NewAPIKey(), imagegen.NewAPIKey()
	is.True(k1 != k2)
	is.True(strings.HasPrefix(k1, imagegen.APIKeyPrefix))
	is.NoErr(imagegen.CheckAPIKeyFormat(k1))

	// Changing any one character of a generated key breaks its checksum.
	for i := len(imagegen.APIKeyPrefix); i < len(k1); i++ {
		b := []byte(k1)
		b[i] = map[bool]byte{true: 'A', false: 'B'}[b[i] != 'A']
		err := imagegen.CheckAPIKeyFormat(string(b))
		is.True(errors.Is(err, imagegen.ErrUnauthorized)) // altered key refused without lookup
	}
	is.True(errors.Is(imagegen.CheckAPIKeyFormat(k1[:len(k1)-1]), imagegen.ErrUnauthorized))
	is.True(errors.Is(imagegen.CheckAPIKeyFormat("short"), imagegen.ErrUnauthorized))
	is.True(errors.Is(imagegen.CheckAPIKeyFormat(strings.Repeat("x", 300)), imagegen.ErrUnauthorized))
	is.NoErr(imagegen.CheckAPIKeyFormat("demo-key-0123456789")) // imported keys: any form of 16+

	h := imagegen.HashAPIKey(k1)
	is.Equal(len(h), 64)
	is.True(!strings.Contains(h, k1))
	is.Equal(h, imagegen.HashAPIKey(k1))
}

func TestCreateKeyWithName(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	key, rec, err := f.svc.CreateKey(ctx, "u", imagegen.WithKeyName("  CI <runner>  "))
	is.NoErr(err)
	is.Equal(rec.Name, "CI <runner>") // trimmed, kept as typed
	got, err := f.svc.Authenticate(ctx, key)
	is.NoErr(err)
	is.Equal(got.Name, "CI <runner>")
	keys, err := f.svc.Keys(ctx, "u")
	is.NoErr(err)
	is.Equal(len(keys), 1)
	is.Equal(keys[0].Name, "CI <runner>")

	_, _, err = f.svc.CreateKey(ctx, "u", imagegen.WithKeyName(strings.Repeat("n", imagegen.MaxKeyNameChars+1)))
	is.True(errors.Is(err, imagegen.ErrInvalidParams))
	_, _, err = f.svc.CreateKey(ctx, "u", imagegen.WithKeyName("tab\tname"))
	is.True(errors.Is(err, imagegen.ErrInvalidParams))
	keys, err = f.svc.Keys(ctx, "u")
	is.NoErr(err)
	is.Equal(len(keys), 1) // refused names stored nothing
}
