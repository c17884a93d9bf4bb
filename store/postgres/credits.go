package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
)

// AddEntry appends e to the owner's ledger. References "task:…" and
// "refund:…" belong to the store's own charges and refunds.
func (s *Store) AddEntry(ctx context.Context, e imagegen.LedgerEntry) (int64, error) {
	return s.addEntry(ctx, s.pool, e)
}

// addEntry runs the add_entry function on q (the pool or a transaction).
// A refused entry raises no SQL error, so it never aborts a host's
// transaction.
func (s *Store) addEntry(ctx context.Context, q querier, e imagegen.LedgerEntry) (int64, error) {
	if err := imagegen.CheckLedgerEntry(e); err != nil {
		return 0, err
	}
	var code int
	var balance int64
	err := q.QueryRow(ctx, s.sql(`SELECT code, balance FROM {schema}.add_entry($2, $3, $4, $5, {now})`),
		s.nowArg(), e.Owner, string(e.Kind), e.Amount, e.Ref).Scan(&code, &balance)
	if err != nil {
		return 0, wrapErr("add ledger entry", err)
	}
	switch code {
	case 0:
		return balance, imagegen.ErrInsufficientCredits
	case -1:
		return balance, fmt.Errorf("postgres store: ref %q: %w", e.Ref, imagegen.ErrDuplicateEntry)
	}
	return balance, nil
}

// Balance returns the owner's balance.
func (s *Store) Balance(ctx context.Context, owner string) (int64, error) {
	return s.balance(ctx, s.pool, owner)
}

func (s *Store) balance(ctx context.Context, q querier, owner string) (int64, error) {
	var b int64
	err := q.QueryRow(ctx, s.sql(`SELECT balance FROM {schema}.accounts WHERE owner = $1`), owner).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return b, wrapErr("balance", err)
}

// Ledger returns the owner's entries, oldest first.
func (s *Store) Ledger(ctx context.Context, owner string) ([]imagegen.LedgerEntry, error) {
	rows, err := s.pool.Query(ctx, s.sql(`SELECT kind, amount, ref, at FROM {schema}.ledger WHERE owner = $1 ORDER BY seq`), owner)
	if err != nil {
		return nil, wrapErr("ledger", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (imagegen.LedgerEntry, error) {
		e := imagegen.LedgerEntry{Owner: owner}
		var kind string
		err := r.Scan(&kind, &e.Amount, &e.Ref, &e.At)
		e.Kind, e.At = imagegen.LedgerKind(kind), e.At.UTC()
		return e, err
	})
	return out, wrapErr("ledger", err)
}
