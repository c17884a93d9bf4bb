package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

func testKeys(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	k1 := imagegen.APIKey{ID: "key_1", Owner: "u", Hash: imagegen.HashAPIKey("first-key-0123456789"), Hint: "firs…", Name: "laptop <b>☃</b>", CreatedAt: at}
	k2 := imagegen.APIKey{ID: "key_2", Owner: "u", Hash: imagegen.HashAPIKey("second-key-0123456789"), Hint: "seco…", CreatedAt: at}
	other := imagegen.APIKey{ID: "key_3", Owner: "v", Hash: imagegen.HashAPIKey("other-key-0123456789"), Hint: "othe…", CreatedAt: at}
	for _, k := range []imagegen.APIKey{k1, k2, other} {
		is.NoErr(s.PutKey(ctx, k))
	}
	is.True(errors.Is(s.PutKey(ctx, imagegen.APIKey{ID: "key_4", Owner: "w", Hash: k1.Hash}), imagegen.ErrKeyExists))

	got, err := s.KeyByHash(ctx, k1.Hash)
	is.NoErr(err)
	is.Equal(got.ID, k1.ID)
	is.Equal(got.Owner, "u")
	is.Equal(got.Hint, k1.Hint)
	is.Equal(got.Name, k1.Name) // names are kept byte for byte
	is.True(got.CreatedAt.Equal(at))
	_, err = s.KeyByHash(ctx, imagegen.HashAPIKey("unknown-key-0123456789"))
	is.True(errors.Is(err, imagegen.ErrKeyNotFound))

	list, err := s.Keys(ctx, "u")
	is.NoErr(err)
	is.Equal(len(list), 2)
	is.Equal(list[0].ID, k1.ID)
	is.Equal(list[1].ID, k2.ID)
	is.Equal(list[0].Name, k1.Name)
	is.Equal(list[1].Name, "") // a key without a name stays without one

	is.True(errors.Is(s.RevokeKey(ctx, "v", k1.ID), imagegen.ErrKeyNotFound)) // not v's key
	is.True(errors.Is(s.RevokeKey(ctx, "u", "key_none"), imagegen.ErrKeyNotFound))
	is.NoErr(s.RevokeKey(ctx, "u", k1.ID))
	_, err = s.KeyByHash(ctx, k1.Hash)
	is.True(errors.Is(err, imagegen.ErrKeyNotFound))
	_, err = s.KeyByHash(ctx, k2.Hash)
	is.NoErr(err)
	list, err = s.Keys(ctx, "u")
	is.NoErr(err)
	is.Equal(len(list), 2)
	is.True(list[0].Revoked)
	is.True(!list[1].Revoked)
	none, err := s.Keys(ctx, "nobody")
	is.NoErr(err)
	is.Equal(len(none), 0)

	// DeleteKey deletes only the owner's revoked keys.
	is.True(errors.Is(s.DeleteKey(ctx, "u", k2.ID), imagegen.ErrKeyNotFound))      // live
	is.True(errors.Is(s.DeleteKey(ctx, "v", k1.ID), imagegen.ErrKeyNotFound))      // not v's key
	is.True(errors.Is(s.DeleteKey(ctx, "u", "key_none"), imagegen.ErrKeyNotFound)) // no such key
	is.NoErr(s.DeleteKey(ctx, "u", k1.ID))
	is.True(errors.Is(s.DeleteKey(ctx, "u", k1.ID), imagegen.ErrKeyNotFound)) // once
	list, err = s.Keys(ctx, "u")
	is.NoErr(err)
	is.Equal(len(list), 1)
	is.Equal(list[0].ID, k2.ID)
	_, err = s.KeyByHash(ctx, k2.Hash)
	is.NoErr(err)
	is.True(errors.Is(s.TouchKey(ctx, k1.Hash), imagegen.ErrKeyNotFound)) // its hash is gone too
	// A deleted key's hash may be stored again (an operator re-imports it).
	is.NoErr(s.PutKey(ctx, imagegen.APIKey{ID: "key_5", Owner: "u", Hash: k1.Hash, Hint: k1.Hint, CreatedAt: at}))
	list, err = s.Keys(ctx, "u")
	is.NoErr(err)
	is.Equal(len(list), 2)
	is.Equal(list[1].ID, "key_5")
}

// testKeyLastUse: TouchKey records a key's use by the store's clock, at
// most once per imagegen.KeyUseGranularity, and both KeyByHash and Keys
// report it.
func testKeyLastUse(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	used := imagegen.APIKey{ID: "key_1", Owner: "u", Hash: imagegen.HashAPIKey("used-key-0123456789"), Hint: "used…", CreatedAt: at}
	idle := imagegen.APIKey{ID: "key_2", Owner: "u", Hash: imagegen.HashAPIKey("idle-key-0123456789"), Hint: "idle…", CreatedAt: at}
	is.NoErr(s.PutKey(ctx, used))
	is.NoErr(s.PutKey(ctx, idle))

	lastUse := func(hash string) time.Time {
		k, err := s.KeyByHash(ctx, hash)
		is.NoErr(err)
		return k.LastUsedAt
	}
	is.True(lastUse(used.Hash).IsZero()) // never used

	is.NoErr(s.TouchKey(ctx, used.Hash))
	first := lastUse(used.Hash)
	is.True(!first.IsZero())

	// Within the granularity a touch changes nothing...
	h.Advance(imagegen.KeyUseGranularity / 2)
	is.NoErr(s.TouchKey(ctx, used.Hash))
	is.True(lastUse(used.Hash).Equal(first))
	// ...after it, the use is recorded at the store's time.
	h.Advance(imagegen.KeyUseGranularity/2 + time.Second)
	is.NoErr(s.TouchKey(ctx, used.Hash))
	second := lastUse(used.Hash)
	is.Equal(second.Sub(first), imagegen.KeyUseGranularity+time.Second)

	list, err := s.Keys(ctx, "u")
	is.NoErr(err)
	is.Equal(len(list), 2)
	is.True(list[0].LastUsedAt.Equal(second))
	is.True(list[1].LastUsedAt.IsZero()) // the other key stays unused

	is.True(errors.Is(s.TouchKey(ctx, imagegen.HashAPIKey("unknown-key-0123456789")), imagegen.ErrKeyNotFound))

	// A revoked key is listed with its last use.
	is.NoErr(s.RevokeKey(ctx, "u", used.ID))
	list, err = s.Keys(ctx, "u")
	is.NoErr(err)
	is.True(list[0].Revoked)
	is.True(list[0].LastUsedAt.Equal(second))
}
