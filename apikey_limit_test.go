package imagegen_test

import (
	"errors"
	"testing"

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
