package imagegen_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// An owner holds at most MaxKeysPerOwner unrevoked keys: the next is
// refused (a validation error naming the bound) until one is revoked;
// other owners and imported keys are not affected.
func TestKeysPerOwnerAreBounded(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, nil, func(c *imagegen.Config) { c.MaxKeysPerOwner = 3 })
	var made []imagegen.APIKey
	for range 3 {
		_, rec, err := f.svc.CreateKey(ctx, "u")
		is.NoErr(err)
		made = append(made, rec)
	}
	_, _, err := f.svc.CreateKey(ctx, "u")
	var verr *imagegen.ValidationError
	is.True(errors.As(err, &verr))                     // a client's mistake, not a server error
	is.True(errors.Is(err, imagegen.ErrInvalidParams)) // 422 on the wire
	is.Equal(verr.Field, "keys")

	_, _, err = f.svc.CreateKey(ctx, "v") // another owner
	is.NoErr(err)
	_, err = f.svc.ImportKey(ctx, "u", "operator-imported-key-0001")
	is.NoErr(err) // an operator's import is not refused

	is.NoErr(f.svc.RevokeKey(ctx, "u", made[0].ID))
	_, _, err = f.svc.CreateKey(ctx, "u")
	is.True(errors.As(err, &verr)) // the import counts: still 3 active
	is.NoErr(f.svc.RevokeKey(ctx, "u", made[1].ID))
	_, _, err = f.svc.CreateKey(ctx, "u") // 2 active: room for one
	is.NoErr(err)
}

// Revoking keeps the owner's newest RevokedKeysKept revoked keys and
// deletes older ones, so that a create-and-revoke loop does not grow the
// store; live keys and other owners' keys are never deleted, and a
// deleted key still does not authenticate.
func TestRevokedKeysAreKeptUpToABound(t *testing.T) {
	for name, keep := range map[string]int{"bounded": 3, "keep all": -1} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			f := newFixture(t, nil, func(c *imagegen.Config) { c.MaxKeysPerOwner = 2; c.RevokedKeysKept = keep })
			live, _, err := f.svc.CreateKey(ctx, "u")
			is.NoErr(err)
			_, other, err := f.svc.CreateKey(ctx, "v")
			is.NoErr(err)
			is.NoErr(f.svc.RevokeKey(ctx, "v", other.ID))
			var secrets []string
			var revoked []string // ids, oldest first
			for range 8 {
				f.clock.Advance(time.Minute)
				secret, rec, err := f.svc.CreateKey(ctx, "u")
				is.NoErr(err)
				is.NoErr(f.svc.RevokeKey(ctx, "u", rec.ID))
				secrets, revoked = append(secrets, secret), append(revoked, rec.ID)
			}
			keys, err := f.svc.Keys(ctx, "u")
			is.NoErr(err)
			var ids []string
			for _, k := range keys {
				if k.Revoked {
					ids = append(ids, k.ID)
				}
			}
			want := revoked
			if keep >= 0 {
				want = revoked[len(revoked)-keep:] // the newest
			}
			is.Equal(ids, want)
			is.Equal(len(keys), len(want)+1) // and the live key
			_, err = f.svc.Authenticate(ctx, live)
			is.NoErr(err)
			for _, secret := range secrets {
				_, err := f.svc.Authenticate(ctx, secret)
				is.True(errors.Is(err, imagegen.ErrUnauthorized))
			}
			vs, err := f.svc.Keys(ctx, "v")
			is.NoErr(err)
			is.Equal(len(vs), 1) // v's own revoked key is v's business
		})
	}
}
