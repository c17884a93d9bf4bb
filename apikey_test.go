package imagegen_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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

// touchCounter counts the store writes that record a key's use.
type touchCounter struct {
	imagegen.Store
	touches int
}

func (c *touchCounter) TouchKey(ctx context.Context, hash string) error {
	c.touches++
	return c.Store.TouchKey(ctx, hash)
}

// Authenticate records a key's last use, writing to the store only when
// the recorded use is at least KeyUseGranularity old.
func TestAuthenticateRecordsLastUse(t *testing.T) {
	is := is.New(t)
	var counter *touchCounter
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
		counter = &touchCounter{Store: c.Store}
		c.Store = counter
	})
	key, rec, err := f.svc.CreateKey(ctx, "u")
	is.NoErr(err)
	is.True(rec.LastUsedAt.IsZero())
	lastUse := func() time.Time {
		keys, err := f.svc.Keys(ctx, "u")
		is.NoErr(err)
		return keys[0].LastUsedAt
	}
	is.True(lastUse().IsZero()) // never used

	_, err = f.svc.Authenticate(ctx, key)
	is.NoErr(err)
	first := f.clock.Now()
	is.True(lastUse().Equal(first))
	is.Equal(counter.touches, 1)

	// Requests within the granularity write nothing.
	for range 5 {
		f.clock.Advance(10 * time.Second)
		_, err = f.svc.Authenticate(ctx, key)
		is.NoErr(err)
	}
	is.Equal(counter.touches, 1)
	is.True(lastUse().Equal(first))

	f.clock.Advance(10 * time.Second) // a minute since the recorded use
	_, err = f.svc.Authenticate(ctx, key)
	is.NoErr(err)
	is.Equal(counter.touches, 2)
	is.True(lastUse().Equal(first.Add(time.Minute)))

	// A refused key records nothing.
	_, err = f.svc.Authenticate(ctx, "unknown-key-0123456789")
	is.True(errors.Is(err, imagegen.ErrUnauthorized))
	is.Equal(counter.touches, 2)
}
