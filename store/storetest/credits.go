package storetest

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

func testLedger(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	is.Equal(balance(t, s, "u"), int64(0))
	b, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "grant:welcome"})
	is.NoErr(err)
	is.Equal(b, int64(10))

	// The same reference twice applies once.
	b, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "grant:welcome"})
	is.True(errors.Is(err, imagegen.ErrDuplicateEntry))
	is.Equal(b, int64(10))
	// References are per owner.
	_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "v", Kind: imagegen.LedgerGrant, Amount: 1, Ref: "grant:welcome"})
	is.NoErr(err)

	b, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerWeb, Amount: -4, Ref: "web:page-1"})
	is.NoErr(err)
	is.Equal(b, int64(6))
	// Never below zero: the entry is refused whole.
	_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerWeb, Amount: -7, Ref: "web:page-2"}) // the balance of a refusal is unspecified
	is.True(errors.Is(err, imagegen.ErrInsufficientCredits))
	is.Equal(balance(t, s, "u"), int64(6))
	// The refused reference was not used up.
	b, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerWeb, Amount: -6, Ref: "web:page-2"})
	is.NoErr(err)
	is.Equal(b, int64(0))

	// The store's own references cannot be forged.
	for _, ref := range []string{"task:x", "refund:x"} {
		_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 1, Ref: ref})
		is.True(errors.Is(err, storekit.ErrInvalidStoreInput))
	}

	entries := checkLedger(t, s, "u")
	is.Equal(len(entries), 3)
	kinds := []imagegen.LedgerKind{imagegen.LedgerGrant, imagegen.LedgerWeb, imagegen.LedgerWeb}
	for i, e := range entries {
		is.Equal(e.Owner, "u")
		is.Equal(e.Kind, kinds[i])
		is.True(!e.At.IsZero()) // stamped by the store
	}
	is.Equal(entries[0].Ref, "grant:welcome")
	is.Equal(balance(t, s, "v"), int64(1))
}
