package postgres_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// A grant or web charge that PostgreSQL cannot take (a reference or an
// owner that is not valid UTF-8 or holds NUL, a balance that would pass
// the largest bigint) is refused with ErrInvalidParams, moves no credit,
// and leaves the host's transaction usable, its own writes committed.
func TestRefusedEntryLeavesTheHostTransactionUsable(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "alice", Kind: imagegen.LedgerGrant, Amount: 3, Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, owner, ref string
		amount           int64
		charge           bool
	}{
		{"overflow", "alice", "big", math.MaxInt64, false},
		{"NUL in the ref", "alice", "a\x00b", 1, false},
		{"invalid UTF-8 in the ref", "alice", "a\xffb", 1, false},
		{"NUL in the owner", "a\x00lice", "r", 1, false},
		{"charge with NUL in the ref", "alice", "a\x00b", 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			tx, err := pool.Begin(ctx)
			is.NoErr(err)
			defer func() { _ = tx.Rollback(ctx) }()
			if c.charge {
				_, err = s.ChargeWebTx(ctx, tx, c.owner, c.amount, c.ref)
			} else {
				_, err = s.GrantTx(ctx, tx, c.owner, c.amount, c.ref)
			}
			is.True(errors.Is(err, imagegen.ErrInvalidParams)) // a clear error, not a server error
			_, err = s.GrantTx(ctx, tx, "alice", 1, "after-"+c.name)
			is.NoErr(err) // the transaction is still usable
			is.NoErr(tx.Commit(ctx))
		})
	}
	bal, err := s.Balance(ctx, "alice")
	if err != nil || bal != 3+5 {
		t.Fatalf("balance %d, %v; want 8", bal, err)
	}
}

// A submit for an owner PostgreSQL cannot keep (NUL) is refused with
// ErrInvalidParams and leaves the host's transaction usable.
func TestSubmitTxForAnUnstorableOwnerLeavesTheTransactionUsable(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	svc := newService(t, s, imagegen.Config{})
	tx, err := pool.Begin(ctx)
	is.NoErr(err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = s.SubmitTx(ctx, tx, svc, "a\x00lice", prompt)
	is.True(errors.Is(err, imagegen.ErrInvalidParams))
	_, err = s.GrantTx(ctx, tx, "alice", 1, "after")
	is.NoErr(err) // the transaction is still usable
	is.NoErr(tx.Commit(ctx))
}
