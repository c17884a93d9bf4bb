package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
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
	if err := storekit.CheckLedgerEntry(e); err != nil {
		return 0, err
	}
	var code int
	var balance int64
	err := q.QueryRow(ctx, s.sql(`SELECT code, balance FROM {schema}.add_entry($2, $3, $4, $5, {now})`),
		s.nowArg(), e.Owner, string(e.Kind), e.Amount, e.Ref).Scan(&code, &balance)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "22003" && e.Amount > 0 {
		// numeric_value_out_of_range: balance + amount passes the
		// largest bigint. The caller's mistake, not the store's.
		return 0, fmt.Errorf("postgres store: %s's balance would pass %d with %d more: %w",
			e.Owner, int64(math.MaxInt64), e.Amount, imagegen.ErrInvalidParams)
	}
	if err != nil {
		return 0, s.wrapErr("add ledger entry", err)
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
	return b, s.wrapErr("balance", err)
}

// ledgerColumns are the columns scanEntry reads.
const ledgerColumns = `owner, n, kind, amount, ref, at, balance_after`

func scanEntry(r pgx.CollectableRow) (imagegen.LedgerEntry, error) {
	var e imagegen.LedgerEntry
	var kind string
	var n int64
	err := r.Scan(&e.Owner, &n, &kind, &e.Amount, &e.Ref, &e.At, &e.BalanceAfter)
	e.ID, e.Kind, e.At = strconv.FormatInt(n, 10), imagegen.LedgerKind(kind), e.At.UTC()
	return e, err
}

// Ledger returns the owner's entries, oldest first.
func (s *Store) Ledger(ctx context.Context, owner string) ([]imagegen.LedgerEntry, error) {
	return queryRows(ctx, s, "ledger", scanEntry, `SELECT `+ledgerColumns+` FROM {schema}.ledger WHERE owner = $1 ORDER BY n`, owner)
}

// ListLedger returns a page of the owner's entries, newest first. The
// cursor is the ID (number) of the last entry of the previous page.
func (s *Store) ListLedger(ctx context.Context, owner string, limit int, cursor string) (imagegen.LedgerPage, error) {
	limit = max(limit, 1)
	below := int64(math.MaxInt64)
	if cursor != "" {
		length, err := s.ledgerLength(ctx, owner)
		if err != nil {
			return imagegen.LedgerPage{}, err
		}
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n < 1 || n > length || strconv.FormatInt(n, 10) != cursor {
			return imagegen.LedgerPage{}, fmt.Errorf("postgres store: bad ledger cursor: %w", imagegen.ErrInvalidParams)
		}
		below = n
	}
	entries, err := queryRows(ctx, s, "list ledger", scanEntry, `SELECT `+ledgerColumns+` FROM {schema}.ledger
		WHERE owner = $1 AND n < $2 ORDER BY n DESC LIMIT $3`, owner, below, limit+1)
	if err != nil {
		return imagegen.LedgerPage{}, err
	}
	var page imagegen.LedgerPage
	if len(entries) > limit {
		entries = entries[:limit]
		page.Next = entries[limit-1].ID
	}
	page.Entries = entries
	return page, nil
}

// ledgerLength is how many entries the owner's ledger has.
func (s *Store) ledgerLength(ctx context.Context, owner string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, s.sql(`SELECT entries FROM {schema}.accounts WHERE owner = $1`), owner).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return n, s.wrapErr("list ledger", err)
}
